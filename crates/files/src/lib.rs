//! Safe file output and input for every mpiscope command and library: the one place that
//! decides how an output reaches the disk and what an input may be.
//!
//! * [`output`]: outputs are written atomically ([`AtomicFile`], [`write_atomic`]: a
//!   temporary file in the target's own directory, written, flushed and synced, then renamed
//!   over the target), so a crash or an error never leaves half a file; and an existing file
//!   is replaced only when it is a regular file that this kind of output could have written
//!   ([`Kind`], [`check_output`]), or with `--force`. Directories, symbolic links and special
//!   files are never replaced.
//! * [`contain`]: a path read from an input file (a study's figure file, ...) stays inside
//!   the directory it is meant for ([`contained`]).
//! * [`input`]: inputs are opened only when they are regular files ([`open_regular`]): a
//!   FIFO never blocks a command and a device is never read.
//!
//! Private temporary directories are `tempfile::TempDir` (re-exported as [`TempDir`]):
//! unpredictable names, so a file planted in advance under a guessed name has no effect.
//!
//! No MPI, no command line: errors say which path and what to do, and the commands add the
//! option names.
#![warn(missing_docs)]

pub mod contain;
pub mod input;
pub mod output;

use std::path::PathBuf;

pub use contain::contained;
pub use input::{describe_type, open_regular};
pub use output::{
    check_output, has_marker, write_atomic, write_output, AtomicFile, Kind, Staged, HEAD_BYTES,
};
pub use tempfile::TempDir;

/// Why an output could not be written or an input path was refused. Every variant names
/// the path concerned.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// An existing regular file that this kind of output did not write.
    #[error(
        "{}: exists and is not {what} written by mpiscope; pass --force to replace it \
         (or choose another output path)",
        path.display()
    )]
    NotOurs {
        /// The existing file.
        path: PathBuf,
        /// The kind of output that was to be written there ("an HTML report").
        what: &'static str,
    },
    /// Something at an output path that mpiscope never replaces, even with `--force`.
    #[error(
        "{}: is {found}; mpiscope never replaces one, even with --force (choose another \
         output path)",
        path.display()
    )]
    Protected {
        /// The path.
        path: PathBuf,
        /// What is there ("a directory", "a symbolic link", "a FIFO", ...).
        found: &'static str,
    },
    /// An input that is not a regular file.
    #[error("{}: is {found}, not a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What is there.
        found: &'static str,
    },
    /// A path read from an input file that would lead outside its directory.
    #[error("{key} = \"{value}\": must stay inside {} ({why})", base.display())]
    Escapes {
        /// Where the path was read: the key and its table (`[[figure]] file`).
        key: String,
        /// The path as written.
        value: String,
        /// The directory it must stay in.
        base: PathBuf,
        /// Why it does not ("an absolute path", ...).
        why: String,
    },
    /// The system refused an operation on the path.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done ("cannot write").
        what: &'static str,
        /// The system error.
        source: std::io::Error,
    },
}

impl FileError {
    /// An [`FileError::Io`].
    pub fn io(path: &std::path::Path, what: &'static str, source: std::io::Error) -> FileError {
        FileError::Io {
            path: path.to_path_buf(),
            what,
            source,
        }
    }
}
