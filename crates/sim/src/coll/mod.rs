//! Collective operations as programs of point-to-point operations.
//!
//! Every collective algorithm is a function that, for one rank of the communicator, returns
//! the [`Program`] that rank executes: a sequence of [`POp`]s (sends, receives, waits,
//! computations) whose peers are ranks of the communicator. The MPI layer runs the program
//! with the same point-to-point machinery as user messages (in a separate matching context,
//! so collective messages never match user ones), so collectives cost exactly what their
//! messages cost on the modeled network.
//!
//! Algorithms follow the real implementations (Open MPI's `tuned` component, MPICH) in their
//! message pattern: who sends what to whom, in which order, with which blocking. The
//! [`Selector`]s pick an algorithm from the communicator size and message size with the
//! libraries' decision rules; any algorithm can also be forced by name.

/// One point-to-point operation of a collective program. Peers are communicator ranks.
///
/// Requests are numbered in posting order within one program (the first `Isend`/`Irecv` is
/// request 0); [`POp::Wait`] names one, [`POp::WaitAll`] waits every posted request not yet
/// waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum POp {
    /// Blocking send (returns at once below the eager threshold, else when delivered).
    Send {
        /// Destination rank.
        peer: u32,
        /// Payload bytes.
        bytes: u64,
        /// Tag (collectives use their own negative tags).
        tag: i32,
    },
    /// Non-blocking send.
    Isend {
        /// Destination rank.
        peer: u32,
        /// Payload bytes.
        bytes: u64,
        /// Tag.
        tag: i32,
    },
    /// Blocking receive.
    Recv {
        /// Source rank.
        peer: u32,
        /// Payload bytes expected.
        bytes: u64,
        /// Tag.
        tag: i32,
    },
    /// Non-blocking receive.
    Irecv {
        /// Source rank.
        peer: u32,
        /// Payload bytes expected.
        bytes: u64,
        /// Tag.
        tag: i32,
    },
    /// Wait for request number `n` of this program.
    Wait(u32),
    /// Wait for every request posted and not yet waited.
    WaitAll,
    /// Computation of this many flops (a reduction operator's work, when modeled).
    Compute(f64),
}

/// The operations one rank performs in one collective.
pub trait Program: Send {
    /// The next operation, or `None` when the rank is done with the collective.
    fn next_op(&mut self) -> Option<POp>;
}

/// A program held as a list.
#[derive(Debug, Clone, Default)]
pub struct OpList {
    ops: Vec<POp>,
    at: usize,
}

impl OpList {
    /// A program running `ops` in order.
    pub fn new(ops: Vec<POp>) -> OpList {
        OpList { ops, at: 0 }
    }

    /// The operations.
    pub fn ops(&self) -> &[POp] {
        &self.ops
    }
}

impl Program for OpList {
    fn next_op(&mut self) -> Option<POp> {
        let op = self.ops.get(self.at).copied();
        self.at += 1;
        op
    }
}

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    /// MPI_Barrier.
    Barrier,
    /// MPI_Bcast.
    Bcast,
    /// MPI_Reduce.
    Reduce,
    /// MPI_Allreduce.
    Allreduce,
    /// MPI_Alltoall.
    Alltoall,
    /// MPI_Alltoallv.
    Alltoallv,
    /// MPI_Gather.
    Gather,
    /// MPI_Gatherv.
    Gatherv,
    /// MPI_Scatter.
    Scatter,
    /// MPI_Scatterv.
    Scatterv,
    /// MPI_Allgather.
    Allgather,
    /// MPI_Allgatherv.
    Allgatherv,
    /// MPI_Reduce_scatter (and `_block`).
    ReduceScatter,
    /// MPI_Scan.
    Scan,
    /// MPI_Exscan.
    Exscan,
}

/// The arguments of one collective call, as seen by one rank. Counts are in elements of
/// `dtype_size` bytes, as MPI sees them; per-rank vectors are in communicator rank order.
#[derive(Debug, Clone, PartialEq)]
pub struct CollArgs {
    /// Which collective.
    pub kind: Collective,
    /// Communicator size.
    pub size: u32,
    /// This rank in the communicator.
    pub rank: u32,
    /// Root (rooted collectives), else 0.
    pub root: u32,
    /// Element count: the buffer of bcast/reduce/allreduce/scan, the per-peer send count of
    /// alltoall/allgather/gather/scatter.
    pub count: u64,
    /// Per-peer receive count (alltoall, allgather, gather, scatter), else equal to `count`.
    pub recv_count: u64,
    /// Bytes per element (send side).
    pub dtype_size: u64,
    /// Bytes per element (receive side).
    pub recv_dtype_size: u64,
    /// Per-rank send counts (alltoallv, scatterv), empty otherwise.
    pub send_counts: Vec<u64>,
    /// Per-rank receive counts (alltoallv, gatherv, allgatherv, reduce_scatter).
    pub recv_counts: Vec<u64>,
}

/// Library whose decision rules choose the algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// Open MPI's `tuned` fixed decision rules (as SimGrid 3.32's `ompi` selector).
    Ompi,
    /// MPICH's decision rules.
    Mpich,
}

/// Why a collective could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CollError {
    /// No algorithm of that name for that collective.
    #[error("no {kind:?} algorithm called `{name}` (known: {known})")]
    UnknownAlgorithm {
        /// The collective.
        kind: Collective,
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// Arguments that cannot describe a call (vector of the wrong length, root out of range).
    #[error("bad {kind:?} arguments: {message}")]
    BadArgs {
        /// The collective.
        kind: Collective,
        /// What is wrong.
        message: String,
    },
}
