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
    /// From the end of `MPI_Init` to the start of `MPI_Finalize` (from the first entry or to
    /// the last exit when the record holds neither), seconds: the application time, what
    /// `mpi_s` and `compute_s` divide.
    pub app_s: f64,
    /// Time inside recorded MPI calls of the first thread within the application time,
    /// seconds. `MPI_Init` and `MPI_Finalize` are not in it (see `init_s`, `finalize_s`);
    /// before this key's meaning was changed they were.
    pub mpi_s: f64,
    /// Time between MPI calls of the first thread within the application time (from the end
    /// of `MPI_Init` to the start of `MPI_Finalize`), seconds.
    pub compute_s: f64,
    /// `100 mpi_s / app_s`: the share of the application time spent in MPI.
    pub mpi_pct: f64,
    /// Time in `MPI_Init` or `MPI_Init_thread`, seconds.
    pub init_s: f64,
    /// Time in `MPI_Finalize`, seconds.
    pub finalize_s: f64,
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

/// The per-rank times summed over ranks (mpiP's aggregate row).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Totals {
    /// Application time (end of `MPI_Init` to start of `MPI_Finalize`), seconds.
    pub app_s: f64,
    /// MPI time within it, seconds.
    pub mpi_s: f64,
    /// Compute time within it, seconds.
    pub compute_s: f64,
    /// `100 mpi_s / app_s`.
    pub mpi_pct: f64,
    /// Time in `MPI_Init` or `MPI_Init_thread`, seconds.
    pub init_s: f64,
    /// Time in `MPI_Finalize`, seconds.
    pub finalize_s: f64,
}

impl Totals {
    /// The sums over `ranks`.
    pub fn of(ranks: &[RankStats]) -> Totals {
        let mut t = Totals::default();
        for r in ranks {
            t.app_s += r.app_s;
            t.mpi_s += r.mpi_s;
            t.compute_s += r.compute_s;
            t.init_s += r.init_s;
            t.finalize_s += r.finalize_s;
        }
        if t.app_s > 0.0 {
            t.mpi_pct = 100.0 * t.mpi_s / t.app_s;
        }
        t
    }
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
    /// Time at this callsite of the rank that spent least there, seconds (over the `ranks`
    /// that called there).
    pub rank_min_s: f64,
    /// Mean time per rank at this callsite, seconds (over the `ranks` that called there).
    pub rank_mean_s: f64,
    /// Time at this callsite of the rank that spent most there, seconds.
    pub rank_max_s: f64,
    /// Coefficient of variation of the time per rank here (population standard deviation
    /// over mean, over the ranks that called there): 0 when every rank spends the same.
    pub rank_cov: f64,
}

/// Messages of one size class (powers of two).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SizeBin {
    /// Smallest size of the class, bytes: 0, then `2^k` for sizes in `[2^k, 2^(k+1))`.
    pub from_bytes: u64,
    /// The same, written `"0B"`, `"1B"`, `"512B"`, `"1KiB"`, ...
    pub label: String,
    /// Point-to-point messages sent to a process (not `MPI_PROC_NULL`), by bytes sent.
    pub p2p: u64,
    /// Collective calls (each rank's call counts once), by the bytes of the call's buffer
    /// (`bytes`: what the process contributes; a `Bcast`'s buffer); barriers have none.
    pub collective: u64,
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
