//! MPI-free core of T-NBC, the transparent non-blocking collectives of [Li 2010].
//!
//! The preload libraries that will intercept MPI_Alltoall build on four pieces kept here so they can
//! be tested without MPI:
//! - [`schedule`]: LibNBC-style schedule tables (rounds of send/receive items separated by barriers);
//! - [`pages`]: which pages of a user receive buffer may be protected, and which merged page ranges
//!   may be unprotected once a set of sub-messages has been copied (pages shared between
//!   sub-messages are released only when every sub-message touching them is done);
//! - [`pending`]: a fixed-capacity table of pending sub-message address ranges that a SIGSEGV
//!   handler can search with atomics only;
//! - [`access`]: access-order tracing (which received sub-message the program reads first) and
//!   the consensus order per call site;
//! - [`model`]: [Li 2010]'s overlap model and the OSU / IMB overlap measures;
//! - [`decide`]: per call site, whether overlapping makes the program faster, measured;
//! - [`guard`]: page protection, atomic publication of received pages (`mremap`) and the
//!   SIGSEGV handler itself;
//! - [`uffd`]: userfaultfd registration of the emptied pages, so that the kernel makes every
//!   access wait, system calls included (page protection is the fallback).

pub mod access;
pub mod decide;
pub mod guard;
pub mod model;
pub mod pages;
pub mod pending;
pub mod schedule;
pub mod uffd;

/// Smallest receive buffer, in bytes, that T-NBC overlaps unless `MPISCOPE_OVERLAP_MIN_BYTES`
/// says otherwise: the break-even measured on shared memory (docs/BENCHMARKS.md). The
/// preload library, `mpiscope overlap --min-bytes` and `mpiscope overlap predict
/// --min-bytes` share it, so a prediction describes what a run would overlap.
pub const DEFAULT_MIN_BYTES: u64 = 524_288;

/// Errors of the T-NBC core.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The page size is zero or not a power of two.
    #[error("page size {0} is not a power of two")]
    BadPageSize(usize),
    /// A communicator size of zero or a rank outside it.
    #[error("rank {rank} outside a communicator of {size}")]
    BadRank {
        /// The rank given.
        rank: usize,
        /// The communicator size given.
        size: usize,
    },
    /// A system call failed (name, errno).
    #[error("{0} failed: errno {1}")]
    Os(&'static str, i32),
    /// An access order that is not a permutation of the ranks (its length, the size).
    #[error("access order of {0} entries is not a permutation of {1} ranks")]
    BadOrder(usize, usize),
    /// The pending table has no free slot.
    #[error("pending table full ({0} slots)")]
    TableFull(usize),
}
