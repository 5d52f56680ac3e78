//! Reports on mpiscope traces.
//!
//! * [`report`]: the whole report of a run, as `mpiscope report` prints it, from the passes
//!   below;
//! * [`profile`]: per-function counts, times and bytes, and per-rank compute versus MPI
//!   time, streamed over every rank in constant memory per rank (rows in [`stats`], the
//!   time window in [`window`]);
//! * [`phase`]: where each rank's main loop lies (`--phase loop`), from the loop structure;
//! * [`dump`]: events as text, one line each;
//! * [`ending`]: how each rank's record ends, where ranks were waiting, wait-for cycles;
//! * [`volume`]: what a call moves, in bytes, by MPI semantics;
//! * [`matrix`]: messages and bytes rank x rank, point-to-point and collective;
//! * [`balance`]: load imbalance, wait states and a placement hint (point-to-point waits,
//!   one per blocked call, in [`waits`]);
//! * [`sites`]: callsites across ranks (time per rank: min, mean, max, variation);
//! * [`symbols`]: callsites resolved to function and `file:line` from the binaries' debug
//!   information.

pub mod balance;
mod byid;
pub mod compare;
pub mod dump;
pub mod ending;
pub mod histogram;
pub mod html;
pub mod matrix;
pub mod messages;
pub mod overlap;
pub mod parallel;
pub mod phase;
pub mod profile;
pub mod report;
pub mod sites;
pub mod stats;
pub mod structure;
pub mod symbols;
pub mod volume;
pub mod waits;
pub mod window;

#[cfg(test)]
mod testutil;

/// A problem while analysing a run.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The run directory or a rank file could not be read.
    #[error(transparent)]
    Run(#[from] mpiscope_trace::RunDirError),
    /// A rank file could not be read.
    #[error(transparent)]
    Read(#[from] mpiscope_trace::ReadError),
    /// A rank has no main loop (`--phase loop`).
    #[error("no main loop found in {dir}: {reason}")]
    NoMainLoop {
        /// The run directory.
        dir: String,
        /// Why, naming the rank.
        reason: String,
    },
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Write(#[from] std::io::Error),
    /// A second input does not belong with the run (what differs, naming the rank).
    #[error("{0}")]
    Mismatch(String),
}
