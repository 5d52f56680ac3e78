//! What the events of every rank showed, which the global definitions then describe.

use std::collections::BTreeMap;

use super::comms::Comms;

/// What the events showed, which the definitions describe.
pub(super) struct Seen {
    /// Region id of each function and call site, numbered in order of first call.
    pub(super) regions: BTreeMap<RegionKey, u32>,
    /// Events written per location.
    pub(super) locations: BTreeMap<u64, u64>,
    /// Host of each rank, in rank file order.
    pub(super) hosts: Vec<String>,
    /// Earliest entry and latest exit (ns).
    pub(super) first: u64,
    pub(super) last: u64,
    /// The communicators the events referred to, with their global ids.
    pub(super) comms: Comms,
}

/// A region: an MPI function, called from a source file and line when the call site
/// resolves (one region per resolved site, so that each carries its place in the source).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RegionKey {
    /// The MPI function.
    pub(super) function: String,
    /// The calling file and line.
    pub(super) site: Option<(String, u32)>,
}

/// The location id of `thread` of `rank`: Score-P's numbering, the rank in the low 32
/// bits and the thread above, so that a main thread's location is its rank (viewers such
/// as ViTE take a message's peer rank for a location id).
pub(super) fn location(rank: u32, thread: u16) -> u64 {
    (u64::from(thread) << 32) | u64::from(rank)
}

/// The rank and thread of location `loc`.
pub(super) fn rank_thread(loc: u64) -> (u32, u64) {
    (loc as u32, loc >> 32)
}
