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
//!
//! * [`program`] builds the program of one rank, [`algorithm_name`] tells which algorithm a
//!   selector picks, [`algorithms`] lists the algorithms of a collective (names as SimGrid's
//!   `--cfg=smpi/<collective>:<name>` spells them; a few aliases are also accepted).
//! * [`algorithms_used`] lists every algorithm a call runs (sub-collectives included: remainders
//!   broadcast through the selector, reduce + bcast, …) and [`simgrid_abort`] tells whether
//!   SimGrid 3.32 aborts on that call in replay (the programs are valid nonetheless).
//! * [`Collective::from_name`], [`Collective::function`], [`Collective::of_family`],
//!   [`resolve_algorithm`] and [`parse_forced`]: every name of a collective comes from the
//!   one table of `names.rs`, every name of an algorithm from its collective's table (below).
//! * One file per collective holds its algorithms in its `ALGORITHMS` table of `Algorithm`s
//!   (a name and the function that builds the program), in the order users see them;
//!   `names.rs` reads the names from those tables and `Cx::build` calls the chosen entry.
//!   Adding an algorithm is its builder function and one row of that table.
//!   `select.rs` holds the decision rules of both selectors; `ops.rs` the shared builders and
//!   Open MPI's trees.
//!
//! A communicator of one rank runs the empty program whatever the algorithm.

mod allgather;
mod allgatherv;
mod allreduce;
mod alltoall;
mod alltoallv;
mod barrier;
mod bcast;
mod gather;
mod names;
mod ops;
mod reduce;
mod reduce_scatter;
mod scan;
mod scatter;
mod select;

pub use names::{algorithms, parse_forced, resolve_algorithm};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_patterns;
#[cfg(test)]
mod tests_tables;
#[cfg(test)]
mod tests_timing;

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
    /// Computation of this many flops.
    Compute(f64),
    /// The reduction operator applied to this many bytes: a buffer received (or this
    /// rank's own) combined into the partial result. The engine charges the platform's
    /// measured cost per byte (`mpiscope/reduction`), nothing without it.
    Combine(u64),
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
    /// Open MPI 4.1's `tuned` component as it runs: the same fixed decision rules as
    /// [`Selector::Ompi`], with Open MPI's own parameters where SimGrid substitutes its
    /// own: no segmentation (the fixed rules pass a segment size of 0, so the pipelined
    /// trees send each buffer whole) and a broadcast's `basic_linear` as the root sending
    /// to every rank (SimGrid's `NTSL` is a chain of 8 KiB segments).
    OpenMpi4,
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

/// The collective tags SimGrid 3.32 uses (`src/smpi/include/private.hpp`). Matching never
/// depends on them (collective messages have their own context), but keeping SimGrid's values
/// keeps message order per (source, destination, tag) identical.
pub(crate) mod tag {
    /// `COLL_TAG_REDUCE`.
    pub const REDUCE: i32 = -112;
    /// `COLL_TAG_SCATTER`.
    pub const SCATTER: i32 = -223;
    /// `COLL_TAG_SCATTERV`.
    pub const SCATTERV: i32 = -334;
    /// `COLL_TAG_GATHER`.
    pub const GATHER: i32 = -445;
    /// `COLL_TAG_ALLGATHER`.
    pub const ALLGATHER: i32 = -556;
    /// `COLL_TAG_ALLGATHERV`.
    pub const ALLGATHERV: i32 = -667;
    /// `COLL_TAG_BARRIER`.
    pub const BARRIER: i32 = -778;
    /// `COLL_TAG_REDUCE_SCATTER`.
    pub const REDUCE_SCATTER: i32 = -889;
    /// `COLL_TAG_ALLTOALLV`.
    pub const ALLTOALLV: i32 = -1000;
    /// `COLL_TAG_ALLTOALL`.
    pub const ALLTOALL: i32 = -1112;
    /// `COLL_TAG_GATHERV`.
    pub const GATHERV: i32 = -2223;
    /// `COLL_TAG_BCAST`.
    pub const BCAST: i32 = -3334;
    /// `COLL_TAG_ALLREDUCE`.
    pub const ALLREDUCE: i32 = -4445;
    /// The fixed tag of SimGrid's scan and exscan.
    pub const SCAN: i32 = -888;
    /// The fixed tag of Open MPI's segmented ring allreduce.
    pub const RING_SEGMENTED: i32 = 666;
}

/// What building a program returns.
pub(crate) type Built = Result<Box<dyn Program>, CollError>;

/// One algorithm of a collective: its canonical name and the function that builds the
/// program of one rank (arguments already validated, communicator of two ranks or more).
/// Each collective file lists its own in `ALGORITHMS`, in the order users see them.
#[derive(Clone, Copy)]
pub(crate) struct Algorithm {
    /// The canonical name (as SimGrid's `--cfg=smpi/<collective>:<name>` spells it).
    pub name: &'static str,
    /// The program of `args.rank`; nested calls go through the `Cx`.
    pub build: fn(&CollArgs, &mut Cx) -> Built,
}

impl Algorithm {
    /// The algorithm called `name`, built by `build` (one row of a table).
    pub(crate) const fn new(name: &'static str, build: fn(&CollArgs, &mut Cx) -> Built) -> Self {
        Algorithm { name, build }
    }
}

/// Building context: the selector, the forced algorithm (it applies to every call of its
/// collective, nested ones included, as `--cfg=smpi/<collective>:<name>` does in SimGrid) and
/// what the build ran into.
pub(crate) struct Cx<'f> {
    selector: Selector,
    forced: Option<(Collective, &'f str)>,
    /// Every algorithm the call runs, outermost first.
    used: Vec<&'static str>,
    /// Why SimGrid 3.32 would abort on this call (empty if it would not).
    aborts: Vec<&'static str>,
}

impl<'f> Cx<'f> {
    fn new(selector: Selector, forced: Option<(Collective, &'f str)>) -> Cx<'f> {
        Cx {
            selector,
            forced,
            used: Vec::new(),
            aborts: Vec::new(),
        }
    }

    /// Records an algorithm an algorithm calls directly (not through the selector).
    pub(crate) fn enter(&mut self, name: &'static str) {
        self.used.push(name);
    }

    /// Records a path on which SimGrid 3.32 aborts in replay.
    pub(crate) fn abort(&mut self, why: &'static str) {
        if !self.aborts.contains(&why) {
            self.aborts.push(why);
        }
    }

    /// The algorithm this call runs.
    fn choose(&self, args: &CollArgs) -> Result<&'static str, CollError> {
        match self.forced {
            Some((kind, name)) if kind == args.kind => {
                resolve_algorithm(kind, name).ok_or_else(|| CollError::UnknownAlgorithm {
                    kind,
                    name: name.to_string(),
                    known: algorithms(kind).join(", "),
                })
            }
            _ => Ok(select::choose(args, self.selector)),
        }
    }

    /// The segment size (bytes) of a segmented algorithm whose SimGrid version uses
    /// `bytes`: 0 (one segment: the whole buffer) under [`Selector::OpenMpi4`], whose fixed
    /// rules pass no segment size.
    pub(crate) fn segment(&self, bytes: u64) -> u64 {
        if self.selector == Selector::OpenMpi4 {
            0
        } else {
            bytes
        }
    }

    /// The program of a (possibly nested) call.
    pub(crate) fn build(&mut self, args: &CollArgs) -> Result<Box<dyn Program>, CollError> {
        let name = self.choose(args)?;
        self.used.push(name);
        let forced_here = matches!(self.forced, Some((kind, _)) if kind == args.kind);
        if args.size <= 1
            || (!forced_here && self.selector == Selector::Mpich && select::mpich_noop(args))
        {
            return Ok(ops::empty());
        }
        let algorithm = names::table(args.kind)
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| CollError::UnknownAlgorithm {
                kind: args.kind,
                name: name.to_string(),
                known: algorithms(args.kind).join(", "),
            })?;
        (algorithm.build)(args, self)
    }
}

impl CollArgs {
    /// Arguments of a nested call: same communicator and rank, another collective, count
    /// and root (element sizes are kept; per-rank vectors are cleared).
    pub(crate) fn nested(&self, kind: Collective, count: u64, root: u32) -> CollArgs {
        CollArgs {
            kind,
            size: self.size,
            rank: self.rank,
            root,
            count,
            recv_count: count,
            dtype_size: self.dtype_size,
            recv_dtype_size: self.dtype_size,
            send_counts: Vec::new(),
            recv_counts: Vec::new(),
        }
    }

    /// `count * dtype_size`: the buffer of bcast/reduce/allreduce/scan, or the block every
    /// rank sends in alltoall/allgather/gather.
    pub(crate) fn bytes(&self) -> u64 {
        self.count.saturating_mul(self.dtype_size)
    }
}

/// Checks that `args` can describe a call.
fn validate(args: &CollArgs) -> Result<(), CollError> {
    let bad = |message: String| {
        Err(CollError::BadArgs {
            kind: args.kind,
            message,
        })
    };
    if args.size == 0 {
        return bad("empty communicator".into());
    }
    if args.rank >= args.size {
        return bad(format!("rank {} not below size {}", args.rank, args.size));
    }
    let rooted = matches!(
        args.kind,
        Collective::Bcast
            | Collective::Reduce
            | Collective::Gather
            | Collective::Gatherv
            | Collective::Scatter
            | Collective::Scatterv
    );
    if rooted && args.root >= args.size {
        return bad(format!("root {} not below size {}", args.root, args.size));
    }
    let n = args.size as usize;
    let at_root = args.rank == args.root;
    let need_send = match args.kind {
        Collective::Alltoallv => true,
        Collective::Scatterv => at_root,
        _ => false,
    };
    let need_recv = match args.kind {
        Collective::Alltoallv | Collective::Allgatherv | Collective::ReduceScatter => true,
        Collective::Gatherv => at_root,
        _ => false,
    };
    if need_send && args.send_counts.len() != n {
        return bad(format!(
            "{} send counts for {} ranks",
            args.send_counts.len(),
            n
        ));
    }
    if need_recv && args.recv_counts.len() != n {
        return bad(format!(
            "{} receive counts for {} ranks",
            args.recv_counts.len(),
            n
        ));
    }
    // Sizes the algorithms can multiply and add without overflow.
    let size = u64::from(args.size);
    let total = |count: u64, dtype: u64| {
        count
            .checked_mul(dtype)
            .and_then(|b| b.checked_mul(size))
            .filter(|&b| b <= MAX_COLLECTIVE_BYTES)
    };
    let sum = |counts: &[u64], dtype: u64| {
        counts
            .iter()
            .try_fold(0u64, |acc, &c| acc.checked_add(c.checked_mul(dtype)?))
            .filter(|&b| b <= MAX_COLLECTIVE_BYTES)
    };
    if total(args.count, args.dtype_size).is_none()
        || total(args.recv_count, args.recv_dtype_size).is_none()
        || sum(&args.send_counts, args.dtype_size).is_none()
        || sum(&args.recv_counts, args.recv_dtype_size).is_none()
    {
        return bad(format!(
            "more than {MAX_COLLECTIVE_BYTES} bytes moved (count {}, datatype {} bytes, {} ranks)",
            args.count, args.dtype_size, args.size
        ));
    }
    Ok(())
}

/// The most bytes one collective call may move in total (2^50, a pebibyte): beyond, sizes are not
/// credible and the algorithms' arithmetic could overflow.
pub const MAX_COLLECTIVE_BYTES: u64 = 1 << 50;

/// The program of `args.rank` for this collective call, with the algorithm `selector`'s
/// decision rules pick, or the algorithm named `forced` (see [`algorithms`]). A forced
/// algorithm also applies to the nested calls of the same collective (remainders), as in
/// SimGrid; nested calls of other collectives use the selector.
pub fn program(
    args: &CollArgs,
    selector: Selector,
    forced: Option<&str>,
) -> Result<Box<dyn Program>, CollError> {
    validate(args)?;
    Cx::new(selector, forced.map(|f| (args.kind, f))).build(args)
}

/// The (outermost) algorithm [`program`] runs for these arguments.
pub fn algorithm_name(
    args: &CollArgs,
    selector: Selector,
    forced: Option<&str>,
) -> Result<&'static str, CollError> {
    validate(args)?;
    Cx::new(selector, forced.map(|f| (args.kind, f))).choose(args)
}

/// Every algorithm [`program`] runs for these arguments, in the order they are entered
/// (nested calls: remainders broadcast through the selector, reduce then bcast, …).
pub fn algorithms_used(
    args: &CollArgs,
    selector: Selector,
    forced: Option<&str>,
) -> Result<Vec<&'static str>, CollError> {
    validate(args)?;
    let mut cx = Cx::new(selector, forced.map(|f| (args.kind, f)));
    cx.build(args)?;
    Ok(cx.used)
}

/// Why SimGrid 3.32 aborts on this call in replay (design note §8: the MVAPICH2 k-nomial
/// bcast, reached directly or through a remainder, redbcast or GB; pair algorithms on a
/// communicator whose size is not a power of two; the SMP bcast fallback of split_bintree),
/// or `None` if it runs. [`program`] still returns a valid program in these cases.
pub fn simgrid_abort(
    args: &CollArgs,
    selector: Selector,
    forced: Option<&str>,
) -> Result<Option<String>, CollError> {
    validate(args)?;
    let mut cx = Cx::new(selector, forced.map(|f| (args.kind, f)));
    cx.build(args)?;
    Ok(if cx.aborts.is_empty() {
        None
    } else {
        Some(cx.aborts.join("; "))
    })
}
