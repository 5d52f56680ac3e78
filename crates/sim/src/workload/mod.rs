//! Workloads: what each simulated rank does, as a stream of [`Action`]s.
//!
//! One API for every kind of workload: the engine asks each rank's [`RankWorkload`] for its
//! next action, executes it in simulated time, and passes back the [`Outcome`] (a test's or
//! a probe's flag), so a workload can decide at simulated time (an HPL skeleton polling with
//! `Iprobe`). Trace replay ([`ti`] for SimGrid time-independent traces, [`trace`] for ours,
//! [`structural`] for our traces' compressed loop structure) is one kind of workload;
//! programmatic skeletons are another. [`open`] is the one way in for recorded workloads:
//! it tells the three kinds apart and reads each the way it is read.

mod open;
pub mod structural;
mod threads;
pub mod ti;
pub mod trace;

pub use open::{open, Input, InputKind, Loaded, OpenOptions};

use crate::coll::CollArgs;

/// A communicator id within a simulation (0 is the world).
pub type CommId = u32;

/// A request handle chosen by the workload (unique among the rank's live requests).
pub type ReqHandle = u64;

/// Any source / any tag.
pub const ANY: i64 = -1;

/// One thing a rank does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Compute this many flops on the rank's host (shared with the host's other ranks).
    Compute {
        /// Floating-point operations.
        flops: f64,
    },
    /// Sleep (no CPU used).
    Sleep {
        /// Seconds.
        secs: f64,
    },
    /// The MPI library copies a message through its bounce buffers (packing or unpacking a
    /// strided datatype): `secs` of copying in `fragments` fragments, no CPU share taken
    /// (as [`Action::Sleep`]). Between fragments the library yields the core: on an
    /// oversubscribed core (see [`crate::SimConfig::oversubscribed_wake_up`]) where another
    /// rank computes, the next fragment waits for that rank to yield in turn.
    Pack {
        /// Seconds of copying in all.
        secs: f64,
        /// Fragments (at least one).
        fragments: u32,
        /// The world rank copying the other side of the same message, if any: the two
        /// copies are one pipeline through shared buffers (Open MPI's pipelined protocol for
        /// non-contiguous data), so each end's pack ends only when the other's has. A
        /// sender's blocking send thus lasts until its receiver has unpacked.
        with: Option<u32>,
    },
    /// Send `bytes` to communicator rank `dst`. Blocking unless `req` is given.
    Send {
        /// Destination (communicator rank).
        dst: u32,
        /// Tag.
        tag: i64,
        /// Payload bytes.
        bytes: u64,
        /// Communicator.
        comm: CommId,
        /// `Some` for a non-blocking send: the handle to wait on.
        req: Option<ReqHandle>,
        /// Synchronous send (never completes before the matching receive).
        sync: bool,
    },
    /// Receive from communicator rank `src` ([`ANY`] for any). Blocking unless `req` is given.
    Recv {
        /// Source (communicator rank) or [`ANY`].
        src: i64,
        /// Tag or [`ANY`].
        tag: i64,
        /// Payload bytes expected.
        bytes: u64,
        /// Communicator.
        comm: CommId,
        /// `Some` for a non-blocking receive.
        req: Option<ReqHandle>,
    },
    /// Send `send_bytes` to `dst` and receive `recv_bytes` from `src`, both with `tag`, and
    /// block until both complete (`MPI_Sendrecv`: the receive is posted first).
    Sendrecv {
        /// Destination (communicator rank).
        dst: u32,
        /// Payload bytes sent.
        send_bytes: u64,
        /// Source (communicator rank) or [`ANY`].
        src: i64,
        /// Payload bytes expected.
        recv_bytes: u64,
        /// Tag of both messages.
        tag: i64,
        /// Communicator.
        comm: CommId,
    },
    /// Wait until every listed request has completed (unknown handles are ignored).
    Wait {
        /// Handles.
        reqs: Vec<ReqHandle>,
    },
    /// Is the request complete? (`Outcome::Flag`; a complete request is freed.)
    Test {
        /// Handle.
        req: ReqHandle,
    },
    /// Block until a message from `src` with `tag` can be received.
    Probe {
        /// Source or [`ANY`].
        src: i64,
        /// Tag or [`ANY`].
        tag: i64,
        /// Communicator.
        comm: CommId,
    },
    /// Is a message from `src` with `tag` available? (`Outcome::Flag`.)
    Iprobe {
        /// Source or [`ANY`].
        src: i64,
        /// Tag or [`ANY`].
        tag: i64,
        /// Communicator.
        comm: CommId,
    },
    /// A collective on `comm`; `args.rank`/`args.size` are this rank in `comm` and its size.
    Collective {
        /// The call.
        args: CollArgs,
        /// Communicator.
        comm: CommId,
        /// Flops computed after the collective (reductions' work, as SimGrid's `comp`).
        comp_flops: f64,
        /// Non-blocking collective: the handle to wait on. The collective then advances on
        /// its own while the rank goes on (ideal asynchronous progress, as with a progress
        /// thread), and the handle completes when its last step does.
        req: Option<ReqHandle>,
    },
    /// Defines a communicator (every member must define it the same way before using it).
    DefineComm {
        /// Its id.
        comm: CommId,
        /// World ranks of its members, in communicator rank order.
        members: Vec<u32>,
    },
    /// Marks the callsite of the following actions (for per-callsite reports).
    Callsite(u32),
    /// Compute up to `chunks` chunks of `flops` each, probing after each chunk for a message
    /// from `src` with `tag` (as `Iprobe`), and stop after the first chunk whose probe finds
    /// one ([`Outcome::Polled`]). Equivalent to the loop `Compute; Iprobe` (each probe
    /// counts as an MPI call) at the cost of one computation: how HPL updates the trailing
    /// matrix while a panel broadcast is pending.
    ComputeWhilePolling {
        /// Floating-point operations per chunk.
        flops: f64,
        /// Most chunks to compute (at least one is).
        chunks: u64,
        /// Source or [`ANY`].
        src: i64,
        /// Tag or [`ANY`].
        tag: i64,
        /// Communicator.
        comm: CommId,
    },
    /// Read the simulated clock (`Outcome::Time`); takes no time. For skeletons that
    /// measure a repeated pattern once and stand for its repetitions with one `Sleep`.
    Clock,
    /// Done.
    Finalize,
}

/// The result of the previous action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    /// Nothing to report.
    #[default]
    None,
    /// The answer of a test or a probe.
    Flag(bool),
    /// The simulated time when [`Action::Clock`] ran, picoseconds.
    Time(u64),
    /// How [`Action::ComputeWhilePolling`] ended: the chunks computed, and whether the last
    /// probe found a message.
    Polled {
        /// Chunks computed.
        chunks: u64,
        /// The last probe's answer.
        found: bool,
    },
}

/// A problem in a workload's input.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A malformed input file.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line (or event number for binary traces).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A run directory could not be opened (no manifest, a bad one, missing rank files).
    #[error("cannot open the trace {path}: {message}")]
    Open {
        /// The run directory.
        path: String,
        /// Why.
        message: String,
    },
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A well-formed input that the replay cannot simulate faithfully (calls from several
    /// threads of a rank).
    #[error("{path}: {message}")]
    Unsupported {
        /// The file.
        path: String,
        /// What cannot be replayed, and why.
        message: String,
    },
}

/// The action stream of one rank.
pub trait RankWorkload: Send {
    /// The next action, given the outcome of the previous one; `None` ends the rank (as
    /// `Finalize` does).
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>>;
}
