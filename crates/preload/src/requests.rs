//! Requests: each request a call creates gets an id, so that its completion (in `Wait`,
//! `Test`, `Waitall`, ...) can be tied to the call that started it.
//!
//! Handles are not identities: MPI libraries reuse a freed handle, and both Open MPI and MPICH
//! return one shared handle for every request that completed at creation (a small `Isend`).
//! So a live request is known by its handle *and* the address of the variable the program
//! keeps it in (`MPI_Isend(..., &reqs[3])` then `MPI_Wait(&reqs[3])`): a lookup takes the
//! entry with the same handle and address, else the oldest entry with the same handle.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::comms::CommInfo;
use crate::mpi::MPI_Request;

/// What is known of a live request.
#[derive(Clone, Copy, Debug)]
pub struct ReqEntry {
    /// Id in this rank's trace (never 0).
    pub id: u64,
    /// A receive: its completion status is decoded.
    pub recv: bool,
    /// A persistent request: completion does not free it.
    pub persistent: bool,
    /// Its communicator (translates the status source).
    pub comm: Option<&'static CommInfo>,
    /// The handle value.
    pub handle: usize,
    /// Where the program stored the handle (0 when unknown).
    pub addr: usize,
}

/// A multiplicative hasher for handle values.
#[derive(Default)]
pub struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100000001b3);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (v as u64 ^ (v as u64 >> 29)).wrapping_mul(0x9e3779b97f4a7c15);
    }
}

type Map = HashMap<usize, Vec<ReqEntry>, BuildHasherDefault<HandleHasher>>;

static LIVE: Mutex<Map> = Mutex::new(HashMap::with_hasher(BuildHasherDefault::new()));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Entries kept per handle before the oldest is forgotten (completions we never saw).
const MAX_PER_HANDLE: usize = 4096;

/// Reserves room so that steady state does not allocate.
pub fn reserve(n: usize) {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).reserve(n);
}

/// A request was created and stored at `addr`: returns its id.
pub fn create(
    handle: MPI_Request,
    addr: usize,
    recv: bool,
    persistent: bool,
    comm: Option<&'static CommInfo>,
) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let h = handle as usize;
    let e = ReqEntry {
        id,
        recv,
        persistent,
        comm,
        handle: h,
        addr,
    };
    let mut m = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let v = m.entry(h).or_default();
    // An entry under the same handle and address is stale: its completion was not seen.
    if addr != 0 {
        v.retain(|x| x.addr != addr);
    }
    if v.len() >= MAX_PER_HANDLE {
        v.remove(0);
    }
    v.push(e);
    id
}

/// The live request with this handle, stored at `addr` (or the oldest with this handle).
pub fn lookup(handle: MPI_Request, addr: usize) -> Option<ReqEntry> {
    lookup_except(handle, addr, &[])
}

/// Same as [`lookup`], skipping the ids in `taken` (entries already matched to earlier
/// elements of the same request array, when the program's addresses are not known).
/// Returns the entry and whether its handle is shared by several live requests.
pub fn lookup_except(handle: MPI_Request, addr: usize, taken: &[i64]) -> Option<ReqEntry> {
    lookup_shared(handle, addr, taken).map(|(e, _)| e)
}

/// [`lookup_except`], also telling whether the handle is shared.
pub fn lookup_shared(handle: MPI_Request, addr: usize, taken: &[i64]) -> Option<(ReqEntry, bool)> {
    let m = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let v = m.get(&(handle as usize))?;
    if let [only] = v.as_slice() {
        return Some((*only, false));
    }
    let free = |e: &&ReqEntry| !taken.contains(&(e.id as i64));
    v.iter()
        .filter(free)
        .find(|e| addr != 0 && e.addr == addr)
        .or_else(|| v.iter().find(free))
        .map(|e| (*e, true))
}

/// The request with this handle and id completed (or was freed).
pub fn complete(handle: usize, id: u64) {
    let mut m = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = m.get_mut(&handle) {
        v.retain(|e| e.id != id);
        if v.is_empty() {
            m.remove(&handle);
        }
    }
}

/// Same as [`complete`] for an entry.
pub fn complete_entry(e: &ReqEntry) {
    complete(e.handle, e.id);
}

/// Number of live requests.
pub fn live() -> usize {
    LIVE.lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .map(Vec::len)
        .sum()
}
