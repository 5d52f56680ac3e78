//! What a simulation gives: the per-rank and per-callsite results, the timeline, and why a
//! simulation could not finish.

use crate::coll;
use crate::platform::PlatformError;
use crate::time::Time;
use crate::workload::WorkloadError;

/// Why a simulation stopped without finishing.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The platform could not route a message.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// A workload's input is malformed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A collective could not be built.
    #[error("rank {rank}: {source}")]
    Collective {
        /// The rank.
        rank: u32,
        /// The problem.
        source: coll::CollError,
    },
    /// An action refers to something that does not exist.
    #[error("rank {rank}: {message}")]
    Invalid {
        /// The rank.
        rank: u32,
        /// What is wrong.
        message: String,
    },
    /// Some event of a rank would happen after the last date the simulator represents
    /// (2^64 ps, 213 days of simulated time): a computation, a sleep or a transfer too long
    /// for it, not a deadlock.
    #[error("simulated time overflow at rank {rank}: rank {rank} {what} since {since}, which would end after {horizon:.0} s (213 days), the last date the simulator represents", horizon = Time::HORIZON_SECS)]
    TimeOverflow {
        /// The rank.
        rank: u32,
        /// What it does (as a deadlock describes it).
        what: String,
        /// When it started.
        since: Time,
    },
    /// Every remaining rank waits for something that can never happen.
    #[error("deadlock at {time}: {} rank(s) blocked: {}", blocked.len(), blocked.iter().take(8).map(|(r, w)| format!("rank {r} {w}")).collect::<Vec<_>>().join("; "))]
    Deadlock {
        /// Simulated date.
        time: Time,
        /// (rank, what it waits for).
        blocked: Vec<(u32, String)>,
    },
}

/// Per-rank results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RankResult {
    /// When the rank finished, seconds.
    pub end_s: f64,
    /// Time computing.
    pub compute_s: f64,
    /// Time inside MPI calls while its messages moved.
    pub comm_s: f64,
    /// Time inside MPI calls waiting for a peer to post the matching operation.
    pub wait_s: f64,
    /// MPI actions executed.
    pub mpi_calls: u64,
}

/// One interval of a rank's timeline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Span {
    /// Rank.
    pub rank: u32,
    /// What (`compute`, `MPI_Send`, ...).
    pub name: &'static str,
    /// The rank's callsite then ([`crate::workload::Action::Callsite`]; 0 when none was set).
    pub callsite: u32,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// What the ranks spent at one callsite.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CallsiteStats {
    /// Callsite id (0: unknown).
    pub callsite: u32,
    /// MPI calls, all ranks: one per traced call (a workload's
    /// [`Action::Callsite`](crate::workload::Action::Callsite) marks), or one per action for
    /// workloads that do not mark calls.
    pub calls: u64,
    /// MPI actions simulated for them, all ranks (a `Sendrecv` is three: send, receive,
    /// wait; a call that only reads local state, none).
    pub actions: u64,
    /// Seconds in MPI, summed over ranks.
    pub seconds: f64,
    /// The rank whose mean time per call here is the largest.
    pub slowest_rank: u32,
    /// That rank's mean seconds per call (what a benchmark that times the slowest rank
    /// measures).
    pub slowest_rank_mean_s: f64,
}

/// What a simulation produced.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SimResult {
    /// Date the last rank finished, seconds.
    pub makespan_s: f64,
    /// Per rank.
    pub ranks: Vec<RankResult>,
    /// Per callsite id, by id.
    pub callsites: Vec<CallsiteStats>,
    /// Bytes carried per link (link id, bytes), nonzero only.
    pub link_bytes: Vec<(u32, f64)>,
    /// Busy core-seconds fraction integral per host.
    pub host_busy_s: Vec<f64>,
    /// Actions executed.
    pub actions: u64,
    /// Messages sent.
    pub messages: u64,
    /// Timeline, when recorded.
    pub timeline: Vec<Span>,
    /// Work done by the network model's sharing solver.
    pub solver: crate::network::maxmin::SolverStats,
}
