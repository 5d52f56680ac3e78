//! Requests: each request a call creates gets an id, so that its completion (in `Wait`,
//! `Test`, `Waitall`, ...) can be tied to the call that started it, whatever handle value
//! the MPI library reuses.

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

type Map = HashMap<usize, ReqEntry, BuildHasherDefault<HandleHasher>>;

static LIVE: Mutex<Map> = Mutex::new(HashMap::with_hasher(BuildHasherDefault::new()));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Requests created (ids handed out).
pub static CREATED: AtomicU64 = AtomicU64::new(0);

/// Reserves room so that steady state does not allocate.
pub fn reserve(n: usize) {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).reserve(n);
}

/// A request was created: returns its id.
pub fn create(handle: MPI_Request, recv: bool, persistent: bool, comm: Option<&'static CommInfo>) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    CREATED.fetch_add(1, Ordering::Relaxed);
    let h = handle as usize;
    let e = ReqEntry { id, recv, persistent, comm, handle: h };
    // A stale entry under the same handle (its completion was not seen) is replaced.
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).insert(h, e);
    id
}

/// The live request with this handle.
pub fn lookup(handle: MPI_Request) -> Option<ReqEntry> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).get(&(handle as usize)).copied()
}

/// The request with this handle and id completed (or was freed).
pub fn complete(handle: usize, id: u64) {
    let mut m = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if m.get(&handle).is_some_and(|e| e.id == id) {
        m.remove(&handle);
    }
}

/// Same as [`complete`] for an entry.
pub fn complete_entry(e: &ReqEntry) {
    complete(e.handle, e.id);
}

/// Number of live requests.
pub fn live() -> usize {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).len()
}
