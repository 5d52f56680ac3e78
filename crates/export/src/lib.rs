//! Exports of mpiscope traces to the input formats of other tools.
//!
//! * [`simgrid_ti`]: SimGrid "time-independent" traces, replayable with
//!   `smpirun -replay` (SimGrid 3.32);
//! * [`chrome`]: Chrome trace event JSON for Perfetto, with message arrows;
//! * [`paraver`]: Paraver's `.prv`, `.pcf` and `.row` text files, in [`extrae`]'s numbering of
//!   MPI calls and states so that Extrae's Paraver configuration files apply;
//! * [`otf2`]: OTF2 archives through Debian's libotf2, loaded at run time (Vampir, Scalasca,
//!   `otf2-print`).
//!
//! `mpiscope_analyze::messages` pairs sends and receives rank by rank, for the formats that
//! draw messages.
//!
//! Exporters read a run directory through [`mpiscope_trace::RunDir`] and stream each rank's
//! events, so memory stays small whatever the trace size. Each format's module registers
//! itself with a [`Registration`] (name, description, export function) listed in
//! [`Format::ALL`]: the command line, help and errors take the formats from there.

use std::path::{Path, PathBuf};

use mpiscope_trace::RunDir;

pub mod chrome;
pub mod extrae;
pub mod otf2;
pub mod outputs;
pub mod paraver;
pub mod simgrid_ti;

pub use chrome::{export_chrome, ChromeSummary};
pub use otf2::{export_otf2, Otf2Summary};
pub use paraver::{export_paraver, ParaverSummary};
pub use simgrid_ti::{export_simgrid_ti, TiOptions, TiSummary};

/// What every export is given: the tools' formats take the options they use and leave the
/// others.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExportOptions {
    /// Host speed (flop/s) turning compute bursts into flop counts (simgrid-ti).
    pub host_speed_flops: f64,
    /// Compute bursts shorter than this many ns are dropped (simgrid-ti).
    pub min_compute_ns: u64,
    /// Replace an existing output that mpiscope did not write (never a directory, a
    /// symbolic link or a special file).
    pub force: bool,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            host_speed_flops: 1e9,
            min_compute_ns: 0,
            force: false,
        }
    }
}

/// What an export wrote, for its user: one sentence, and notes on what it left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    /// What was written where, and what opens it.
    pub message: String,
    /// Calls or ranks the format could not carry, one line each.
    pub notes: Vec<String>,
    /// What was written, counted in the format's own terms (`events`, `sends`, ...), in a
    /// fixed order: `export --json`'s `counts`.
    pub counts: Vec<(&'static str, u64)>,
}

/// An export format offered by name: each format's module defines one, [`Format::ALL`]
/// lists them (adding a format is its module plus one line there).
#[derive(Debug)]
pub struct Registration {
    /// Its name (`--format NAME`).
    pub name: &'static str,
    /// What it is for and what the export writes, for help.
    pub description: &'static str,
    /// Writes the run to the output path (a file, a directory or a base name, as the
    /// description says).
    pub export: fn(&RunDir, &Path, &ExportOptions) -> Result<Written, ExportError>,
}

/// An export format, by the name command lines give it (`--format simgrid-ti`).
#[derive(Debug, Clone, Copy)]
pub struct Format(&'static Registration);

impl Format {
    /// Every format, in the order help lists them.
    pub const ALL: [Format; 4] = [
        Format(&simgrid_ti::FORMAT),
        Format(&chrome::FORMAT),
        Format(&paraver::FORMAT),
        Format(&otf2::FORMAT),
    ];

    /// The format's name (`simgrid-ti`, `chrome`, `paraver`, `otf2`).
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What the format is for and what the export writes, for help.
    pub fn description(self) -> &'static str {
        self.0.description
    }

    /// Writes `run` in this format to `out`.
    pub fn export(
        self,
        run: &RunDir,
        out: &Path,
        options: &ExportOptions,
    ) -> Result<Written, ExportError> {
        (self.0.export)(run, out, options)
    }

    /// Every format's name, for messages: `simgrid-ti, chrome, paraver, otf2`.
    pub fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Format {}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    /// The format called `s`; the error lists the formats.
    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown format `{s}`: supported formats: {}",
                    Format::names()
                )
            })
    }
}

/// Why an export failed. Every variant names the file or directory concerned (and the byte
/// offset in the trace file when the problem has one).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A rank trace file could not be opened or read (the error names the file, and the
    /// offset for damaged files).
    #[error(transparent)]
    Read(#[from] mpiscope_trace::ReadError),
    /// The run directory lists no rank at all.
    #[error("{path}: the run has no ranks to export")]
    NoRanks {
        /// The run directory.
        path: PathBuf,
    },
    /// The run has `ranks` ranks but no trace file for one of them.
    #[error("{path}: no trace file for rank {rank} (the run has {ranks} ranks); a replay needs every rank")]
    MissingRank {
        /// The run directory.
        path: PathBuf,
        /// The missing rank.
        rank: u32,
        /// Ranks in the run.
        ranks: u32,
    },
    /// A rank file describes another rank or another world size than the run.
    #[error("{path}: offset 0: file says rank {found_rank} of {found_size}, expected rank {rank} of {ranks}")]
    RankMismatch {
        /// The rank file.
        path: PathBuf,
        /// Rank the file was opened as.
        rank: u32,
        /// Ranks in the run.
        ranks: u32,
        /// Rank recorded in the file's info block.
        found_rank: u32,
        /// World size recorded in the file's info block.
        found_size: u32,
    },
    /// An output file or directory could not be created or written.
    #[error("{path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// An output may not be written where it was asked for (something else is there), or
    /// could not be put in place.
    #[error(transparent)]
    Output(#[from] mpiscope_files::FileError),
    /// A library the format needs (libotf2) is not installed; the message says what to
    /// install.
    #[error(transparent)]
    Library(#[from] mpiscope_dynlib::LoadError),
    /// An option is out of range.
    #[error("{path}: cannot export: {message}")]
    InvalidOption {
        /// The output directory of the refused export.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::Format;

    #[test]
    fn formats_read_back_from_their_names() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
            assert!(!f.description().is_empty());
        }
        let e = "vtf".parse::<Format>().unwrap_err();
        assert_eq!(
            e,
            "unknown format `vtf`: supported formats: simgrid-ti, chrome, paraver, otf2"
        );
    }
}
