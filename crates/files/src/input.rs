//! Opening inputs: regular files only.
//!
//! A path given as an input may name a FIFO (opening it for reading blocks until a writer
//! comes), a device (reading `/dev/zero` never ends) or a directory. [`open_regular`] looks
//! before it opens and checks again what it opened, so a command never blocks on a FIFO
//! nor reads a device.

use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::FileError;

/// What a file type is, with its article, for messages ("a FIFO").
pub fn describe_type(t: &FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "an unknown kind of file"
    }
}

fn refused(path: &Path, t: &FileType) -> io::Error {
    let kind = if t.is_dir() {
        io::ErrorKind::IsADirectory
    } else {
        io::ErrorKind::InvalidInput
    };
    io::Error::new(
        kind,
        FileError::NotRegular {
            path: path.to_path_buf(),
            found: describe_type(t),
        },
    )
}

/// Opens `path` for reading if it is a regular file (a symbolic link to one is followed).
/// Errors keep the system's [`io::ErrorKind`] (`NotFound`, `PermissionDenied`, ...; a
/// directory is `IsADirectory`, another non-regular file `InvalidInput`) and carry a
/// [`FileError`] whose message names the path.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let wrap = |e: io::Error| io::Error::new(e.kind(), FileError::io(path, "cannot open", e));
    let before = std::fs::metadata(path).map_err(wrap)?;
    if !before.is_file() {
        return Err(refused(path, &before.file_type()));
    }
    // Non-blocking, in case a FIFO replaced the file since the look; for a regular file
    // the flag changes nothing.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(wrap)?;
    let after = f.metadata().map_err(wrap)?;
    if !after.is_file() {
        return Err(refused(path, &after.file_type()));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn regular_files_and_links_to_them_open() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a");
        std::fs::write(&p, "text").unwrap();
        let mut s = String::new();
        open_regular(&p).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "text");
        let l = d.path().join("l");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert!(open_regular(&l).is_ok());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = open_regular(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let text = e.to_string();
        assert!(text.contains("fifo") && text.contains("a FIFO"), "{text}");
        let inner = e.get_ref().and_then(|e| e.downcast_ref::<FileError>());
        assert!(matches!(inner, Some(FileError::NotRegular { .. })));
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let e = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let e = open_regular(d.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn a_missing_file_keeps_its_kind_and_names_the_path() {
        let e = open_regular(Path::new("/nonexistent/x.mpst")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("/nonexistent/x.mpst"), "{e}");
    }
}
