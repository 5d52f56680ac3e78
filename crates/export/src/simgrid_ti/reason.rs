//! Why a call was not replayed as such: the [`Reason`]s counted per function name in
//! `TiSummary::skipped`, and the text each note says.

use std::collections::BTreeMap;

/// Counts of calls not replayed as such, by function name and reason.
pub(super) type Notes = BTreeMap<String, BTreeMap<Reason, u64>>;

/// Why a call was not replayed as such; the key of a `TiSummary::skipped` note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Reason {
    /// The function has no TI action.
    NoAction,
    /// A completion or a test that completed nothing.
    Waiting,
    /// A probe.
    Probe,
    /// Every peer is `MPI_PROC_NULL`.
    NullPeer,
    /// The peer is not a known world rank.
    UnknownPeer,
    /// The root is not a known world rank.
    UnknownRoot,
    /// Counts or datatype sizes are not recorded.
    MissingArgs,
    /// A collective on a communicator smaller than the world.
    SubComm,
    /// A collective on a single-process communicator.
    SelfComm,
    /// The communicator is not defined in the trace.
    UnknownComm,
    /// A non-blocking or persistent collective, replayed as the blocking one.
    AsBlocking,
    /// A wildcard receive whose matched source or tag is not recorded.
    UnresolvedWildcard,
    /// A cancelled receive, left out.
    Cancelled,
    /// A cancelled request already written to the replay.
    CancelledTooLate,
    /// A request freed before it completed.
    FreedActive,
    /// A receive that never completed in the trace.
    PendingAtEnd,
    /// A request the trace never created.
    UnknownRequest,
    /// A call after `MPI_Finalize`.
    AfterFinalize,
    /// A call of a thread other than the main thread.
    OtherThread,
    /// Calls the recorder did not record (sampling or time window).
    Unrecorded,
    /// A call still in progress when the rank's record ended.
    Unfinished,
    /// A collective that moves no data (zero counts).
    ZeroCount,
    /// A collective of a run of one process.
    OneProcess,
}

impl Reason {
    /// What the note says about the calls counted.
    pub(super) fn text(self) -> &'static str {
        match self {
            Reason::NoAction => "no TI action; duration added to compute",
            Reason::Waiting => "completed nothing; dropped with its duration (waiting time)",
            Reason::Probe => "probe; dropped with its duration (the replay simulates the wait at the receive)",
            Reason::NullPeer => "to or from MPI_PROC_NULL only; dropped",
            Reason::UnknownPeer => "peer is not a known world rank; not replayed, duration added to compute",
            Reason::UnknownRoot => "root is not a known world rank; not replayed, duration added to compute",
            Reason::MissingArgs => "counts or datatype sizes not recorded; not replayed, duration added to compute",
            Reason::SubComm => {
                "collective on a communicator smaller than MPI_COMM_WORLD (no TI form in SimGrid 3.32); duration added to compute"
            }
            Reason::SelfComm => "collective on a single-process communicator; duration added to compute",
            Reason::UnknownComm => "communicator not defined in the trace; not replayed, duration added to compute",
            Reason::AsBlocking => "non-blocking or persistent collective, replayed as the blocking collective where it starts",
            Reason::UnresolvedWildcard => "wildcard receive whose matched source or tag is not recorded; dropped",
            Reason::Cancelled => "cancelled receive; left out of the replay",
            Reason::CancelledTooLate => "cancelled request already written to the replay (the replay may wait for it)",
            Reason::FreedActive => "request freed before completion; it completes at the end of the replay",
            Reason::PendingAtEnd => "receive never completed in the trace; dropped",
            Reason::UnknownRequest => "request not created in the trace; ignored",
            Reason::AfterFinalize => "after MPI_Finalize; ignored",
            Reason::OtherThread => "on a thread other than the main thread; ignored (multithreaded trace)",
            Reason::Unrecorded => "not recorded (sampling or time window); missing from the replay, which may deadlock",
            Reason::Unfinished => "still in progress when the rank's record ended (it never returned); left out, the rank ends before it",
            Reason::ZeroCount => {
                "zero-count collective (Open MPI and MPICH return at once; SimGrid 3.32 aborts or deadlocks on many); left out, duration added to compute"
            }
            Reason::OneProcess => {
                "collective of a one-process run (it moves nothing between processes; SimGrid 3.32 aborts on some, as `bcast 100 0 6`); left out, duration added to compute"
            }
        }
    }
}
