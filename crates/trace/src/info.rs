//! The JSON blocks of a rank file: [`RankInfo`] at the start, [`Trailer`] at the end.

use serde::{Deserialize, Serialize};

/// How a rank's clock ticks map to nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// `"tsc"` (x86 time-stamp counter) or `"monotonic"` (CLOCK_MONOTONIC, ticks are ns).
    pub source: String,
    /// Ticks read when tracing started.
    pub sync_ticks: u64,
    /// CLOCK_MONOTONIC nanoseconds read together with `sync_ticks`.
    pub sync_ns: u64,
    /// Nominal tick rate, used until a later clock pair is available.
    pub ticks_per_second: f64,
    /// Smallest observed difference between two clock reads, in ns.
    pub resolution_ns: f64,
}

impl ClockInfo {
    /// `CLOCK_MONOTONIC` read directly: a tick is a nanosecond, from 0.
    pub fn nanoseconds() -> ClockInfo {
        ClockInfo {
            source: "monotonic".into(),
            sync_ticks: 0,
            sync_ns: 0,
            ticks_per_second: 1e9,
            resolution_ns: 1.0,
        }
    }
}

/// The description of one rank, written once at the start of its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    /// Rank in the world communicator.
    pub rank: u32,
    /// Size of the world communicator.
    pub size: u32,
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// CPU core at initialization, when known.
    pub core: Option<u32>,
    /// Clock description.
    pub clock: ClockInfo,
    /// The run's epoch (rank 0's initialization) on this rank's monotonic clock, in ns.
    pub epoch_ns: u64,
    /// This rank's monotonic clock minus rank 0's, in ns (0 on rank 0's host).
    pub offset_ns: i64,
    /// MPI library version string.
    pub mpi_library: String,
    /// Thread support provided by the MPI library (`single`, `funneled`, `serialized`, `multiple`).
    pub thread_level: String,
    /// Executable path.
    pub executable: String,
    /// Recorder options in effect (environment settings).
    pub options: serde_json::Value,
}

impl RankInfo {
    /// Rank `rank` of `size` in a run made up by a program (tests, benchmarks, synthetic
    /// traces): host `node`, pid `100 + rank`, a nanosecond clock from 0, no core, no
    /// recorder options.
    pub fn synthetic(rank: u32, size: u32) -> RankInfo {
        RankInfo {
            rank,
            size,
            pid: 100 + rank,
            host: "node".into(),
            core: None,
            clock: ClockInfo::nanoseconds(),
            epoch_ns: 0,
            offset_ns: 0,
            mpi_library: "synthetic".into(),
            thread_level: "single".into(),
            executable: "/bin/synthetic".into(),
            options: serde_json::json!({}),
        }
    }
}

/// Count and time of every call of one function, recorded or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallTotal {
    /// Call id.
    pub id: u32,
    /// C name of the function (so that calls never recorded still have a name).
    #[serde(default)]
    pub name: String,
    /// Made through a Fortran binding.
    #[serde(default)]
    pub fortran: bool,
    /// Calls made.
    pub count: u64,
    /// Calls recorded as events.
    pub recorded: u64,
    /// Time spent in the calls that were timed, in clock ticks.
    pub ticks: u64,
}

/// The closing summary of a rank file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trailer {
    /// Why tracing ended: `finalize`, `exit`, or `signal <name>`.
    pub reason: String,
    /// Clock ticks at the end.
    pub sync_ticks: u64,
    /// CLOCK_MONOTONIC ns read together with `sync_ticks`.
    pub sync_ns: u64,
    /// Events written.
    pub events: u64,
    /// Events that could not be written (write errors after tracing was disabled).
    pub lost: u64,
    /// Per-function totals, including calls not recorded because of sampling or filters.
    pub calls: Vec<CallTotal>,
}

/// Something that happened to a rank that is not a call: a signal the program handled, a
/// hang the recorder noticed, tracing stopped by an error. Written as a note block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// What happened: `signal`, `hang` or `stopped`.
    pub kind: String,
    /// Clock ticks when it happened (converted to ns since the run's epoch by the reader).
    pub ticks: u64,
    /// Thread index it concerns (the thread that received the signal, or that hangs).
    #[serde(default)]
    pub thread: u16,
    /// The signal's name (`SIGTERM`), for `signal` notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Free text: what the recorder did, or why tracing stopped.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Nanoseconds since the run's epoch (filled by the reader; not in the file).
    #[serde(default, skip_serializing)]
    pub time_ns: u64,
}
