//! Communicators: their ids, their members as world ranks, and the translation of a
//! communicator rank to a world rank.
//!
//! A communicator is registered when a call creates it (every function with a new
//! communicator output), or lazily the first time an unknown one is used. Registration is
//! local (group queries, no communication). Its identity across ranks, the key, is a hash of
//! its member list and of how many communicators with that member list this rank created
//! before, so all members agree on it without talking.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use mpiscope_trace::{CommDef, CommKind, PEER_UNKNOWN};

use crate::defs;
use crate::ffi::consts;
use crate::mpi::*;
use crate::status;

/// What the recorder knows of a communicator.
#[derive(Debug)]
pub struct CommInfo {
    /// Id in this rank's trace.
    pub id: u32,
    /// Identity shared by all members.
    pub key: u64,
    /// Is it the world communicator (ranks are world ranks)?
    pub world: bool,
    /// Is it an intercommunicator?
    pub inter: bool,
    /// Size of the local group.
    pub size: u32,
    /// This process's rank in it.
    pub my_rank: c_int,
    /// World rank of each local rank (empty for the world communicator).
    pub ranks: Box<[u32]>,
    /// World rank of each remote rank (intercommunicators).
    pub remote: Box<[u32]>,
}

/// A rank outside the world communicator (a spawned process).
const NOT_IN_WORLD: u32 = u32::MAX;

impl CommInfo {
    /// World rank of local rank `r`.
    #[inline]
    pub fn local_world(&self, r: c_int) -> i64 {
        if self.world {
            return if r >= 0 && (r as u32) < self.size {
                i64::from(r)
            } else {
                PEER_UNKNOWN
            };
        }
        match self.ranks.get(r as usize) {
            Some(&w) if r >= 0 && w != NOT_IN_WORLD => i64::from(w),
            _ => PEER_UNKNOWN,
        }
    }

    /// World rank of the peer `r` of a point-to-point call (remote group of an
    /// intercommunicator).
    #[inline]
    pub fn peer_world(&self, r: c_int) -> i64 {
        if !self.inter {
            return self.local_world(r);
        }
        match self.remote.get(r as usize) {
            Some(&w) if r >= 0 && w != NOT_IN_WORLD => i64::from(w),
            _ => PEER_UNKNOWN,
        }
    }

    fn definition(&self) -> CommDef {
        CommDef {
            id: self.id,
            key: self.key,
            kind: if self.world {
                CommKind::World
            } else if self.inter {
                CommKind::Inter
            } else if self.size == 1
                && self.ranks.first() == Some(&(status::world_rank() as u32))
                && self.id == 1
            {
                CommKind::Own
            } else {
                CommKind::Intra
            },
            size: self.size,
            ranks: if self.world {
                Vec::new()
            } else {
                self.ranks.to_vec()
            },
            remote: self.remote.to_vec(),
        }
    }
}

struct Table {
    by_handle: HashMap<usize, &'static CommInfo>,
    ordinals: HashMap<u64, u32>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(1);
static NEXT_ID: AtomicU32 = AtomicU32::new(0);
static WORLD: AtomicPtr<CommInfo> = AtomicPtr::new(core::ptr::null_mut());
static WORLD_GROUP: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());

/// Per-thread cache of recent lookups.
#[derive(Default)]
pub struct ThreadCache {
    entries: [(usize, usize, u64); 4],
    next: usize,
}

fn hash_ranks(h: &mut u64, ranks: &[u32]) {
    for &r in ranks {
        *h ^= u64::from(r);
        *h = h.wrapping_mul(0x100000001b3);
    }
    *h ^= ranks.len() as u64;
    *h = h.wrapping_mul(0x100000001b3);
}

/// Registers the world and self communicators; called once MPI is initialized.
pub fn start(rank: c_int, size: c_int) {
    let k = consts();
    let mut g: MPI_Group = unsafe { core::mem::zeroed() };
    // SAFETY: MPI is initialized; the world communicator is valid.
    unsafe { PMPI_Comm_group(k.comm_world, &mut g) };
    WORLD_GROUP.store(g as usize as *mut core::ffi::c_void, Ordering::Relaxed);
    let mut h = 0xcbf29ce484222325u64;
    h ^= size as u64;
    let world: &'static CommInfo = Box::leak(Box::new(CommInfo {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        key: h.wrapping_mul(0x100000001b3),
        world: true,
        inter: false,
        size: size as u32,
        my_rank: rank,
        ranks: Box::new([]),
        remote: Box::new([]),
    }));
    WORLD.store(world as *const CommInfo as *mut CommInfo, Ordering::Release);
    let mut hs = 0xcbf29ce484222325u64 ^ 0x5e1f;
    hash_ranks(&mut hs, &[rank as u32]);
    let own: &'static CommInfo = Box::leak(Box::new(CommInfo {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        key: hs,
        world: false,
        inter: false,
        size: 1,
        my_rank: 0,
        ranks: Box::new([rank as u32]),
        remote: Box::new([]),
    }));
    let mut t = Table {
        by_handle: HashMap::with_capacity(64),
        ordinals: HashMap::new(),
    };
    t.by_handle.insert(k.comm_world as usize, world);
    t.by_handle.insert(k.comm_self as usize, own);
    *TABLE.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
    defs::define_comm(world.definition());
    defs::define_comm(own.definition());
}

/// The world communicator's info (after start).
#[inline(always)]
pub fn world() -> Option<&'static CommInfo> {
    let p = WORLD.load(Ordering::Acquire);
    // SAFETY: leaked at start, never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Finds a communicator; registers an unknown valid one when `may_register`.
#[inline]
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn lookup(
    cache: &mut ThreadCache,
    comm: MPI_Comm,
    may_register: bool,
) -> Option<&'static CommInfo> {
    let k = consts();
    if comm == k.comm_world {
        return world();
    }
    let h = comm as usize;
    let gen = GENERATION.load(Ordering::Acquire);
    for &(eh, p, eg) in &cache.entries {
        if eh == h && eg == gen && p != 0 {
            // SAFETY: entries hold leaked infos.
            return Some(unsafe { &*(p as *const CommInfo) });
        }
    }
    let found = {
        let guard = TABLE.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref()?.by_handle.get(&h).copied()
    };
    let info = match found {
        Some(i) => i,
        // SAFETY: only after the call that used the handle succeeded (`may_register`).
        None if may_register && comm != k.comm_null => unsafe { register(comm)? },
        None => return None,
    };
    let slot = cache.next % cache.entries.len();
    cache.entries[slot] = (h, info as *const CommInfo as usize, gen);
    cache.next += 1;
    Some(info)
}

/// As [`lookup`] without registering and without waiting for the table (a peek of a call in
/// progress, possibly in a signal handler): `None` when the communicator is not known yet
/// or the table is busy.
pub fn peek(cache: &mut ThreadCache, comm: MPI_Comm) -> Option<&'static CommInfo> {
    if comm == consts().comm_world {
        return world();
    }
    let h = comm as usize;
    let gen = GENERATION.load(Ordering::Acquire);
    for &(eh, p, eg) in &cache.entries {
        if eh == h && eg == gen && p != 0 {
            // SAFETY: entries hold leaked infos.
            return Some(unsafe { &*(p as *const CommInfo) });
        }
    }
    let guard = TABLE.try_lock().ok()?;
    guard.as_ref()?.by_handle.get(&h).copied()
}

/// World ranks of the members of `group`.
fn group_members(group: MPI_Group) -> Vec<u32> {
    let k = consts();
    let mut n: c_int = 0;
    // SAFETY: valid group from MPI.
    if unsafe { PMPI_Group_size(group, &mut n) } != 0 || n <= 0 {
        return Vec::new();
    }
    let wg = WORLD_GROUP.load(Ordering::Relaxed) as usize as MPI_Group;
    let ranks: Vec<c_int> = (0..n).collect();
    let mut out = vec![0 as c_int; n as usize];
    // SAFETY: arrays of n entries.
    if unsafe { PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), wg, out.as_mut_ptr()) } != 0 {
        return vec![NOT_IN_WORLD; n as usize];
    }
    out.into_iter()
        .map(|w| {
            if w == k.undefined || w < 0 {
                NOT_IN_WORLD
            } else {
                w as u32
            }
        })
        .collect()
}

/// Registers a communicator just created (or met for the first time).
///
/// # Safety
/// `comm` is a communicator the library just accepted or returned.
pub unsafe fn register(comm: MPI_Comm) -> Option<&'static CommInfo> {
    world()?;
    let mut inter: c_int = 0;
    let mut rank: c_int = 0;
    let mut g: MPI_Group = unsafe { core::mem::zeroed() };
    // SAFETY: a valid communicator created by MPI.
    unsafe {
        if PMPI_Comm_test_inter(comm, &mut inter) != 0 || PMPI_Comm_rank(comm, &mut rank) != 0 {
            return None;
        }
        if PMPI_Comm_group(comm, &mut g) != 0 {
            return None;
        }
    }
    let ranks = group_members(g);
    // SAFETY: group from PMPI_Comm_group.
    unsafe { PMPI_Group_free(&mut g) };
    let remote = if inter != 0 {
        let mut rg: MPI_Group = unsafe { core::mem::zeroed() };
        // SAFETY: intercommunicator.
        if unsafe { PMPI_Comm_remote_group(comm, &mut rg) } == 0 {
            let r = group_members(rg);
            unsafe { PMPI_Group_free(&mut rg) };
            r
        } else {
            Vec::new()
        }
    } else {
        Vec::new()
    };
    let mut h = 0xcbf29ce484222325u64;
    if inter != 0 {
        let (a, b) = if ranks <= remote {
            (&ranks, &remote)
        } else {
            (&remote, &ranks)
        };
        hash_ranks(&mut h, a);
        hash_ranks(&mut h, b);
        h ^= 0x69_6e_74_65_72; // "inter"
    } else {
        hash_ranks(&mut h, &ranks);
    }
    let mut guard = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    let table = guard.as_mut()?;
    let ord = table.ordinals.entry(h).or_insert(0);
    let key = h ^ (u64::from(*ord)).wrapping_mul(0x9e3779b97f4a7c15);
    *ord += 1;
    let info: &'static CommInfo = Box::leak(Box::new(CommInfo {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        key,
        world: false,
        inter: inter != 0,
        size: ranks.len() as u32,
        my_rank: rank,
        ranks: ranks.into_boxed_slice(),
        remote: remote.into_boxed_slice(),
    }));
    // Defined before it can be found: no event refers to an undefined communicator.
    defs::define_comm(info.definition());
    table.by_handle.insert(comm as usize, info);
    GENERATION.fetch_add(1, Ordering::Release);
    drop(guard);
    Some(info)
}

/// Forgets a freed communicator handle (its id stays valid in the trace).
pub fn release(handle: usize) {
    let mut guard = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = guard.as_mut() {
        t.by_handle.remove(&handle);
    }
    GENERATION.fetch_add(1, Ordering::Release);
}
