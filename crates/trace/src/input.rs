//! Opening the files a reader is given: only regular files (a named pipe would block
//! forever, a device never end), with an error that says what the path is instead.

use std::path::Path;

/// Opens `path` for reading if it is a regular file (a FIFO would block, a device never
/// ends): the one way the trace crate opens its inputs.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let m = std::fs::metadata(path)?;
    if !m.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            kind_of(&m),
        ));
    }
    std::fs::File::open(path)
}

/// What a file that is not regular is: `not a regular file (a named pipe)`.
pub fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "not a regular file (a directory)"
    } else if t.is_fifo() {
        "not a regular file (a named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "not a regular file (a device)"
    } else if t.is_socket() {
        "not a regular file (a socket)"
    } else {
        "not a regular file"
    }
}
