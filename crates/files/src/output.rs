//! Writing outputs: atomically, and never over what mpiscope did not write.
//!
//! An output goes to a temporary file in the target's own directory (so the final rename
//! stays on one file system and is atomic), is flushed and synced, and is renamed over the
//! target only when complete: a crash, a full disk or an error part-way leaves the old file
//! as it was (and at worst a `.mpiscope-*.tmp` file beside it).
//!
//! Before that, the thing already at the target is judged ([`check_output`]):
//! * nothing: written;
//! * an empty regular file: replaced (nothing is lost);
//! * a regular file this kind of output could have written (its [`Kind`] recognises its
//!   first [`HEAD_BYTES`] bytes: a marker every mpiscope output of that kind carries):
//!   replaced;
//! * another regular file: refused unless `force` (the `--force` of every command);
//! * a directory, a symbolic link (wherever it points), a FIFO, a device or a socket:
//!   refused, even with `force`.

use std::fs::{OpenOptions, Permissions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::input::describe_type;
use crate::FileError;

/// How many leading bytes of an existing file a [`Kind`] sees.
pub const HEAD_BYTES: usize = 64 * 1024;

/// A kind of output, as far as replacing an existing file goes: what it is called in
/// messages and how one that mpiscope wrote is recognised from its first bytes.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// What it is, with its article ("an HTML report").
    pub what: &'static str,
    /// Whether a file beginning with these bytes (at most [`HEAD_BYTES`]) is one of this
    /// kind that mpiscope wrote.
    pub ours: fn(&[u8]) -> bool,
}

impl Kind {
    /// A kind of output.
    pub const fn new(what: &'static str, ours: fn(&[u8]) -> bool) -> Kind {
        Kind { what, ours }
    }
}

/// Whether `head` holds `marker` anywhere: the usual way a [`Kind`] recognises its output.
pub fn has_marker(head: &[u8], marker: &[u8]) -> bool {
    !marker.is_empty() && head.windows(marker.len()).any(|w| w == marker)
}

/// Reads at most [`HEAD_BYTES`] of the regular file `path`, without following a symbolic
/// link or blocking.
fn read_head(path: &Path) -> Result<Vec<u8>, FileError> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| FileError::io(path, "cannot read the existing file", e))?;
    let mut head = Vec::with_capacity(4096);
    f.take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| FileError::io(path, "cannot read the existing file", e))?;
    Ok(head)
}

/// What is at `path` now, if anything, without following a symbolic link.
fn existing(path: &Path) -> Result<Option<std::fs::Metadata>, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::io(path, "cannot inspect", e)),
    }
}

/// Refuses what is never replaced; returns the metadata of an existing regular file.
fn replaceable(path: &Path) -> Result<Option<std::fs::Metadata>, FileError> {
    match existing(path)? {
        None => Ok(None),
        Some(m) if m.file_type().is_file() => Ok(Some(m)),
        Some(m) => Err(FileError::Protected {
            path: path.to_path_buf(),
            found: describe_type(&m.file_type()),
        }),
    }
}

/// Checks that an output of `kind` may be written at `path` (see the module's rules):
/// nothing there, an empty regular file, a regular file `kind` recognises, or any regular
/// file with `force`.
pub fn check_output(path: &Path, kind: &Kind, force: bool) -> Result<(), FileError> {
    let Some(m) = replaceable(path)? else {
        return Ok(());
    };
    if force || m.len() == 0 || (kind.ours)(&read_head(path)?) {
        Ok(())
    } else {
        Err(FileError::NotOurs {
            path: path.to_path_buf(),
            what: kind.what,
        })
    }
}

/// A file being written atomically: bytes go to a temporary file beside the target, and
/// [`AtomicFile::commit`] renames it over the target. Dropped without a commit (an error,
/// a panic), the temporary file is removed and the target is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    w: BufWriter<NamedTempFile>,
    path: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`, which may replace an existing regular file there whatever it
    /// holds (for files inside a directory that mpiscope owns, such as a study's point
    /// files); directories, symbolic links and special files are refused.
    pub fn create(path: &Path) -> Result<AtomicFile, FileError> {
        let m = replaceable(path)?;
        AtomicFile::start(path, m)
    }

    /// Starts writing the output `path` of `kind` after [`check_output`].
    pub fn create_output(path: &Path, kind: &Kind, force: bool) -> Result<AtomicFile, FileError> {
        check_output(path, kind, force)?;
        let m = replaceable(path)?;
        AtomicFile::start(path, m)
    }

    fn start(path: &Path, previous: Option<std::fs::Metadata>) -> Result<AtomicFile, FileError> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if path.file_name().is_none() {
            return Err(FileError::Protected {
                path: path.to_path_buf(),
                found: "a directory",
            });
        }
        // A replaced file keeps its permissions; a new one gets the umask's, as
        // `File::create` would give it.
        let mode = previous.map_or(0o666, |m| m.permissions().mode() & 0o7777);
        let tmp = tempfile::Builder::new()
            .prefix(".mpiscope-")
            .suffix(".tmp")
            .permissions(Permissions::from_mode(mode))
            .tempfile_in(dir)
            .map_err(|e| {
                // tempfile adds the temporary file's random name to the OS error; the
                // target's path is the one to name, once (a missing directory says so
                // itself).
                let e = match std::fs::metadata(dir) {
                    Err(why) => why,
                    Ok(_) => {
                        let text = e.to_string();
                        match text.split_once(" at path ") {
                            Some((why, _)) => std::io::Error::new(e.kind(), why.to_string()),
                            None => e,
                        }
                    }
                };
                FileError::io(path, "cannot create a temporary file beside it", e)
            })?;
        Ok(AtomicFile {
            w: BufWriter::with_capacity(1 << 20, tmp),
            path: path.to_path_buf(),
        })
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, syncs and renames the temporary file over the target.
    pub fn commit(self) -> Result<(), FileError> {
        self.close()?.commit()
    }

    /// Flushes, syncs and closes the temporary file without renaming it yet: for outputs
    /// made of several files (one per rank), each written in turn and all put in place
    /// once every one is complete. Holds no file descriptor.
    pub fn close(self) -> Result<Staged, FileError> {
        let path = self.path;
        let tmp = self
            .w
            .into_inner()
            .map_err(|e| FileError::io(&path, "cannot write", e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| FileError::io(&path, "cannot write", e))?;
        Ok(Staged {
            tmp: tmp.into_temp_path(),
            path,
        })
    }
}

/// A complete output waiting beside its target ([`AtomicFile::close`]); dropped without a
/// commit, it is removed.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::TempPath,
    path: PathBuf,
}

impl Staged {
    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the complete file over its target.
    pub fn commit(self) -> Result<(), FileError> {
        let path = self.path;
        // A directory or another non-file put there since the check makes the rename fail.
        self.tmp
            .persist(&path)
            .map_err(|e| FileError::io(&path, "cannot replace", e.error))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.w.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Writes `bytes` to `path` atomically (see [`AtomicFile::create`] for what it may replace).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)
        .map_err(|e| FileError::io(path, "cannot write", e))?;
    f.commit()
}

/// Writes the output `path` of `kind` atomically, after [`check_output`].
pub fn write_output(path: &Path, kind: &Kind, force: bool, bytes: &[u8]) -> Result<(), FileError> {
    let mut f = AtomicFile::create_output(path, kind, force)?;
    f.write_all(bytes)
        .map_err(|e| FileError::io(path, "cannot write", e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: Kind = Kind::new("a test report", |h| has_marker(h, b"<!-- by mpiscope -->"));

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    fn make_fifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn new_outputs_are_written_and_our_own_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.html");
        write_output(&p, &REPORT, false, b"<!-- by mpiscope --> one").unwrap();
        assert_eq!(read(&p), "<!-- by mpiscope --> one");
        write_output(&p, &REPORT, false, b"<!-- by mpiscope --> two").unwrap();
        assert_eq!(read(&p), "<!-- by mpiscope --> two");
        // Nothing else is left in the directory.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_foreign_file_is_refused_without_force_and_replaced_with_it() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("notes.html");
        std::fs::write(&p, "my notes").unwrap();
        let e = write_output(&p, &REPORT, false, b"<!-- by mpiscope -->").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("notes.html") && text.contains("--force"),
            "{text}"
        );
        assert!(text.contains("a test report"), "{text}");
        assert_eq!(read(&p), "my notes");
        write_output(&p, &REPORT, true, b"<!-- by mpiscope -->").unwrap();
        assert_eq!(read(&p), "<!-- by mpiscope -->");
    }

    #[test]
    fn an_empty_file_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("empty");
        std::fs::write(&p, "").unwrap();
        write_output(&p, &REPORT, false, b"x").unwrap();
        assert_eq!(read(&p), "x");
    }

    #[test]
    fn a_planted_symlink_is_never_followed_nor_replaced() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "<!-- by mpiscope --> precious").unwrap();
        let p = d.path().join("out.html");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        for force in [false, true] {
            let e = write_output(&p, &REPORT, force, b"new").unwrap_err();
            assert!(matches!(e, FileError::Protected { .. }), "{e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
            let e = write_atomic(&p, b"new").unwrap_err();
            assert!(matches!(e, FileError::Protected { .. }), "{e}");
        }
        assert_eq!(read(&victim), "<!-- by mpiscope --> precious");
        assert!(std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
        // A dangling link is refused too (writing through it would create its target).
        let dangling = d.path().join("dangling");
        std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling).unwrap();
        assert!(write_output(&dangling, &REPORT, true, b"x").is_err());
        assert!(!d.path().join("nowhere").exists());
    }

    #[test]
    fn directories_and_fifos_are_never_replaced() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("keep"), "k").unwrap();
        let e = write_output(&sub, &REPORT, true, b"x").unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        assert_eq!(read(&sub.join("keep")), "k");
        let fifo = d.path().join("fifo");
        make_fifo(&fifo);
        // Neither blocks nor replaces the FIFO.
        let e = write_output(&fifo, &REPORT, true, b"x").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = write_atomic(&fifo, b"x").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo_like());
    }

    trait FifoLike {
        fn is_fifo_like(&self) -> bool;
    }
    impl FifoLike for std::fs::FileType {
        fn is_fifo_like(&self) -> bool {
            std::os::unix::fs::FileTypeExt::is_fifo(self)
        }
    }

    #[test]
    fn a_write_that_stops_part_way_leaves_the_old_file_intact() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        std::fs::write(&p, "old contents").unwrap();
        // An error part-way: the writer is dropped without a commit.
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(&vec![b'n'; 3 << 20]).unwrap();
        }
        assert_eq!(read(&p), "old contents");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        // A panic part-way.
        let r = std::panic::catch_unwind(|| {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"new").unwrap();
            panic!("interrupted");
        });
        assert!(r.is_err());
        assert_eq!(read(&p), "old contents");
        // A crash part-way: nothing runs after the write (the temporary file stays, the
        // target does not change).
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(&vec![b'n'; 3 << 20]).unwrap();
        f.flush().unwrap();
        std::mem::forget(f);
        assert_eq!(read(&p), "old contents");
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n.starts_with(".mpiscope-") && n.ends_with(".tmp")),
            "{names:?}"
        );
    }

    #[test]
    fn a_killed_writer_process_leaves_the_old_file_intact() {
        // The same in a real process killed while writing: the test binary reruns itself.
        if let Ok(p) = std::env::var("MPISCOPE_FILES_KILL_TARGET") {
            let mut f = AtomicFile::create(Path::new(&p)).unwrap();
            f.write_all(&vec![b'n'; 1 << 20]).unwrap();
            f.flush().unwrap();
            std::fs::write(format!("{p}.started"), "").unwrap();
            // Killed here, mid-write.
            std::thread::sleep(std::time::Duration::from_secs(60));
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        std::fs::write(&p, "old contents").unwrap();
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "output::tests::a_killed_writer_process_leaves_the_old_file_intact",
                "--nocapture",
            ])
            .env("MPISCOPE_FILES_KILL_TARGET", &p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = d.path().join("out.started");
        let t0 = std::time::Instant::now();
        while !started.exists() && t0.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(started.exists(), "the writer did not start");
        assert_eq!(read(&p), "old contents");
    }

    #[test]
    fn staged_files_appear_only_when_committed() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&a, "old a").unwrap();
        let mut staged = Vec::new();
        for (p, text) in [(&a, "new a"), (&b, "new b")] {
            let mut f = AtomicFile::create(p).unwrap();
            f.write_all(text.as_bytes()).unwrap();
            staged.push(f.close().unwrap());
        }
        assert_eq!(read(&a), "old a");
        assert!(!b.exists());
        for s in staged {
            s.commit().unwrap();
        }
        assert_eq!((read(&a), read(&b)), ("new a".into(), "new b".into()));
        // Dropped without a commit: gone, target untouched.
        let mut f = AtomicFile::create(&a).unwrap();
        f.write_all(b"newer").unwrap();
        drop(f.close().unwrap());
        assert_eq!(read(&a), "new a");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"new").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[test]
    fn markers_are_found_in_the_head_only() {
        assert!(has_marker(b"abc<!-- by mpiscope -->", b"by mpiscope"));
        assert!(!has_marker(b"abc", b""));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        let mut text = vec![b' '; HEAD_BYTES];
        text.extend_from_slice(b"<!-- by mpiscope -->");
        std::fs::write(&p, text).unwrap();
        assert!(check_output(&p, &REPORT, false).is_err());
    }
}
