//! The rows of a report: statistics of one function, one rank, one callsite, one pair of
//! ranks, and of the compute bursts. Plain data, shared by the passes that compute them
//! ([`crate::profile`]) and those that build on them ([`crate::balance`], [`crate::matrix`],
//! [`crate::compare`]).

use std::collections::BTreeMap;

use serde::Serialize;

/// Statistics of one MPI function over the run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CallStats {
    /// Calls made.
    pub count: u64,
    /// Calls recorded as events (fewer than `count` under sampling).
    pub recorded: u64,
    /// Calls made through a Fortran binding.
    pub fortran: u64,
    /// Total time in recorded calls, seconds.
    pub time_s: f64,
    /// Mean time per recorded call, seconds.
    pub mean_s: f64,
    /// Longest recorded call, seconds.
    pub max_s: f64,
    /// Payload bytes sent plus received (see [`crate::volume`]).
    pub bytes: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Median time of a recorded call, seconds: from a log histogram, within
    /// `percentile_rel_error` (6.25%) of the exact one and never outside `[min, max]`.
    pub median_s: f64,
    /// 90th percentile, seconds.
    pub p90_s: f64,
    /// 99th percentile, seconds.
    pub p99_s: f64,
    /// Recorded calls by message size (the call's byte count), powers of two: `"1KiB"`
    /// counts sizes from 1 KiB up to 2 KiB.
    pub sizes: BTreeMap<String, u64>,
}

/// Statistics of one rank.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RankStats {
    /// World rank.
    pub rank: u32,
    /// Host it ran on.
    pub host: String,
    /// Events read.
    pub events: u64,
    /// From the first call's entry to the last call's exit, seconds.
    pub wall_s: f64,
    /// The first call's entry, ns since the run's epoch.
    pub first_ns: u64,
    /// The last call's exit, ns since the run's epoch.
    pub last_ns: u64,
    /// Time inside recorded MPI calls of the first thread, seconds.
    pub mpi_s: f64,
    /// Time between MPI calls of the first thread, seconds.
    pub compute_s: f64,
    /// Compute bursts (gaps between consecutive calls of the first thread).
    pub bursts: u64,
    /// Their mean, seconds.
    pub burst_mean_s: f64,
    /// Their harmonic mean ([Polivanov 2012]'s measure of how closely calls follow each other),
    /// seconds; bursts of 0 ns are left out.
    pub burst_harmonic_mean_s: f64,
    /// Compute time over MPI time ([Grosclaude 2012]'s granularity).
    pub granularity: f64,
    /// Threads that made MPI calls.
    pub threads: u32,
    /// Did the rank end tracing normally (trailer present)?
    pub complete: bool,
    /// How tracing ended, or where the file stops.
    pub end: String,
}

/// Compute bursts (time between consecutive MPI calls of a rank's first thread).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Bursts {
    /// Bursts.
    pub count: u64,
    /// Mean, seconds.
    pub mean_s: f64,
    /// Harmonic mean over the non-zero bursts, seconds.
    pub harmonic_mean_s: f64,
    /// Median, seconds (within `percentile_rel_error`, never outside the bursts' range).
    pub median_s: f64,
    /// 90th percentile, seconds.
    pub p90_s: f64,
    /// 99th percentile, seconds.
    pub p99_s: f64,
    /// Distribution: (smallest ns of a log-scale bucket, bursts in it).
    pub histogram: Vec<crate::histogram::Bucket>,
}

/// One callsite over all ranks.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CallsiteStats {
    /// Number, in order of first appearance (rank 0 first).
    pub callsite: u32,
    /// MPI function called there.
    pub function: String,
    /// `function file:line`, or object file and offset, when known.
    pub location: Option<String>,
    /// Ranks that called there.
    pub ranks: u32,
    /// Recorded calls.
    pub count: u64,
    /// Time in them, seconds.
    pub time_s: f64,
    /// Mean per call, seconds.
    pub mean_s: f64,
    /// Longest call, seconds.
    pub max_s: f64,
    /// Payload bytes sent plus received.
    pub bytes: u64,
}

/// Point-to-point messages from one rank to another.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PairTraffic {
    /// Sender (world rank).
    pub from: u32,
    /// Receiver (world rank).
    pub to: u32,
    /// Messages sent.
    pub messages: u64,
    /// Payload bytes.
    pub bytes: u64,
}
