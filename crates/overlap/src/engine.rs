//! The T-NBC engine: operations in flight, the progress thread, and completion.
//!
//! An [`Op`] is one overlapped Alltoall: a duplicate of the communicator, made once per
//! communicator and kept until MPI_Comm_free (so its messages never match the application's), a staging send buffer, a page-aligned staging receive mapping laid out
//! like the user's pages, the schedule's requests, and one pending-table slot per received
//! chunk (sub-message). Interior pages are published with `mremap` once no pending block shares them; the
//! blocks touching the unaligned first and last pages are completed before the call returns.

use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use mpiscope_overlap_core::guard::{self, Staging, TABLE};
use mpiscope_overlap_core::pages::{self, Range};
use mpiscope_overlap_core::schedule::{Item, Schedule};

use crate::consts::Consts;
use crate::mpi::*;

/// Whether T-NBC is active (MPI_THREAD_MULTIPLE granted and not disabled).
pub static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Smallest overlapped receive buffer in bytes.
pub static MIN_BYTES: AtomicUsize = AtomicUsize::new(65536);
/// Whether T-NBC was ever activated in this process (for `MPISCOPE_OVERLAP_STATS`).
pub static WAS_ACTIVE: AtomicBool = AtomicBool::new(false);
/// Alltoalls that took the overlapped path.
pub static OVERLAPPED: AtomicUsize = AtomicUsize::new(0);
/// Sub-message size: blocks are sent and received in chunks of this many bytes, so only the
/// chunks touching the unaligned first and last pages must complete before the call returns.
const CHUNK: usize = 64 * 1024;
/// Duplicates of the application's communicators, by handle (dropped in MPI_Comm_free).
static DUPS: Mutex<Vec<(usize, SendComm)>> = Mutex::new(Vec::new());
struct SendComm(MPI_Comm);
// SAFETY: MPI handles are usable from any thread under MPI_THREAD_MULTIPLE.
unsafe impl Send for SendComm {}

fn key(comm: MPI_Comm) -> usize {
    let mut k = 0usize;
    // SAFETY: copies the handle's bytes (a pointer or an int) into a usize.
    unsafe {
        std::ptr::copy_nonoverlapping(
            &comm as *const MPI_Comm as *const u8,
            &mut k as *mut usize as *mut u8,
            std::mem::size_of::<MPI_Comm>().min(8),
        )
    };
    k
}

/// The private duplicate of `comm`, created (collectively) on first use.
unsafe fn dup_of(comm: MPI_Comm) -> MPI_Comm {
    let k = key(comm);
    let mut d = DUPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = d.iter().find(|(x, _)| *x == k) {
        return c.0;
    }
    let mut dup = consts().comm_null;
    PMPI_Comm_dup(comm, &mut dup);
    d.push((k, SendComm(dup)));
    dup
}

/// Forgets (and frees) the duplicate of `comm`; call before the application frees `comm`.
pub unsafe fn forget(comm: MPI_Comm) {
    let k = key(comm);
    let mut d = DUPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = d.iter().position(|(x, _)| *x == k) {
        let (_, mut c) = d.swap_remove(i);
        PMPI_Comm_free(&mut c.0);
    }
}

static STOP: AtomicBool = AtomicBool::new(false);
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);
static OPS: Mutex<Vec<Op>> = Mutex::new(Vec::new());
struct SyncConsts(Consts);
// SAFETY: the constants are immutable MPI handles, valid from any thread.
unsafe impl Sync for SyncConsts {}
unsafe impl Send for SyncConsts {}
static CONSTS: OnceLock<SyncConsts> = OnceLock::new();
static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

thread_local! {
    /// Set while this thread runs library code (the progress thread always), so libc and MPI
    /// calls made from inside pass through instead of recursing into completion.
    pub static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// The `mpi.h` macro constants.
pub fn consts() -> &'static Consts {
    &CONSTS
        .get_or_init(|| {
            let mut c = std::mem::MaybeUninit::<Consts>::uninit();
            // SAFETY: the shim fills every field.
            SyncConsts(unsafe {
                crate::consts::mpiscope_get_consts(c.as_mut_ptr());
                c.assume_init()
            })
        })
        .0
}

/// One overlapped Alltoall.
pub struct Op {
    comm: MPI_Comm,
    rank: usize,
    size: usize,
    schedule: Schedule,
    round: usize,
    reqs: Vec<MPI_Request>,
    req_sub: Vec<Option<usize>>,
    send: Vec<u8>,
    staging: Staging,
    /// User receive buffer start (bytes) and first page.
    ubase: usize,
    upage: usize,
    /// Block ranges in user addresses, and their table slots.
    subs: Vec<Range>,
    slots: Vec<usize>,
    released: Vec<bool>,
    arrived: Vec<bool>,
    protected: Option<Range>,
    published: Vec<Range>,
}

// SAFETY: MPI handles are used under MPI_THREAD_MULTIPLE; the buffers are owned by the op.
unsafe impl Send for Op {}

impl Op {
    fn stage(&self, user_addr: usize) -> usize {
        self.staging.base() + (user_addr - self.upage)
    }

    fn sub_at(&self, user_addr: usize) -> usize {
        self.subs.partition_point(|r| r.0 < user_addr)
    }

    fn post_round(&mut self) {
        let c = consts();
        self.reqs.clear();
        self.req_sub.clear();
        while self.round < self.schedule.rounds.len() {
            for item in self.schedule.rounds[self.round].clone() {
                let mut r: MPI_Request = c.request_null;
                match item {
                    Item::Send { peer, offset, len } => {
                        // The receiver's last page is filled by the last rank's last chunk:
                        // that rank sends it first, the other chunks in order (tags tell them
                        // apart), so the call that waits for it returns sooner.
                        let mut order: Vec<usize> = (offset..offset + len).step_by(CHUNK).collect();
                        if self.rank + 1 == self.size {
                            order.rotate_right(1);
                        }
                        for at in order {
                            let n = CHUNK.min(offset + len - at);
                            let tag = ((at - offset) / CHUNK) as c_int;
                            // SAFETY: the chunk lies inside the staging send buffer.
                            unsafe {
                                PMPI_Isend(
                                    self.send.as_ptr().add(at) as *const _,
                                    n as c_int,
                                    c.byte,
                                    peer as c_int,
                                    tag,
                                    self.comm,
                                    &mut r,
                                )
                            };
                            self.reqs.push(r);
                            self.req_sub.push(None);
                        }
                    }
                    Item::Recv { peer, offset, len } => {
                        for at in (offset..offset + len).step_by(CHUNK) {
                            let n = CHUNK.min(offset + len - at);
                            let tag = ((at - offset) / CHUNK) as c_int;
                            let sub = self.sub_at(self.ubase + at);
                            // SAFETY: the chunk lies inside the staging receive mapping.
                            unsafe {
                                PMPI_Irecv(
                                    self.stage(self.ubase + at) as *mut _,
                                    n as c_int,
                                    c.byte,
                                    peer as c_int,
                                    tag,
                                    self.comm,
                                    &mut r,
                                )
                            };
                            self.reqs.push(r);
                            self.req_sub.push(Some(sub));
                        }
                    }
                    Item::Copy { from, to, len } => unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.send.as_ptr().add(from),
                            self.stage(self.ubase + to) as *mut u8,
                            len,
                        );
                        let (a, b) = (
                            self.sub_at(self.ubase + to),
                            self.sub_at(self.ubase + to + len),
                        );
                        for s in a..b {
                            self.arrived[s] = true;
                        }
                    },
                }
            }
            self.round += 1;
            if !self.reqs.is_empty() {
                break;
            }
        }
    }

    /// Tests the requests, publishes what became complete; true when everything is done.
    fn progress(&mut self) -> bool {
        let c = consts();
        if !self.reqs.is_empty() {
            let n = self.reqs.len();
            let mut idx = vec![0 as c_int; n];
            let mut out: c_int = 0;
            // SAFETY: the arrays hold `n` entries.
            unsafe {
                PMPI_Testsome(
                    n as c_int,
                    self.reqs.as_mut_ptr(),
                    &mut out,
                    idx.as_mut_ptr(),
                    c.statuses_ignore,
                )
            };
            if out == c.undefined {
                self.reqs.clear();
            } else {
                for &i in &idx[..out.max(0) as usize] {
                    if let Some(s) = self.req_sub[i as usize] {
                        self.arrived[s] = true;
                    }
                }
                if self.reqs.iter().all(|r| *r == c.request_null) {
                    self.reqs.clear();
                }
            }
        }
        if self.reqs.is_empty() && self.round < self.schedule.rounds.len() {
            self.post_round();
        }
        self.publish();
        self.reqs.is_empty()
            && self.round >= self.schedule.rounds.len()
            && self.released.iter().all(|&r| r)
    }

    fn publish(&mut self) {
        let page = guard::page_size();
        // Bytes on unprotected pages are copied as soon as their block has arrived.
        let pending: Vec<Range> = (0..self.subs.len())
            .filter(|&i| !self.arrived[i])
            .map(|i| self.subs[i])
            .collect();
        if let Some(prot) = self.protected {
            let rel = pages::releasable(prot, &pending, page).unwrap_or_default();
            for (s, e) in pages::subtract(&rel, &self.published) {
                guard::publish(self.stage(s), s, e - s).expect("mremap over the receive buffer");
                self.published.push((s, e));
                self.published.sort_unstable();
            }
        }
        for i in 0..self.subs.len() {
            if self.released[i] || !self.arrived[i] {
                continue;
            }
            let (s, e) = self.subs[i];
            let inner = match self.protected {
                Some((lo, hi)) => (s.max(lo), e.min(hi)),
                None => (0, 0),
            };
            let inner_page = (inner.0 / page * page, inner.1.div_ceil(page) * page);
            if inner.0 < inner.1 && !pages::subtract(&[inner_page], &self.published).is_empty() {
                continue;
            }
            // Copy the parts outside the protected pages (the unaligned edges).
            let copy = |a: usize, b: usize| {
                if a < b {
                    // SAFETY: both ranges lie in live buffers of `b - a` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.stage(a) as *const u8,
                            a as *mut u8,
                            b - a,
                        )
                    }
                }
            };
            if inner.0 < inner.1 {
                copy(s, inner.0);
                copy(inner.1, e);
            } else {
                copy(s, e);
            }
            TABLE.release(self.slots[i]);
            self.released[i] = true;
        }
    }

    /// Whether every block touching an unprotected page is in place.
    fn edges_done(&self) -> bool {
        (0..self.subs.len())
            .all(|i| self.released[i] || !pages::touches_unprotected(self.subs[i], self.protected))
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        for &s in &self.slots {
            TABLE.free(s);
        }
    }
}

/// Runs `f` with the library's re-entrancy flag set.
pub fn inside<T>(f: impl FnOnce() -> T) -> T {
    let was = INSIDE.with(|c| c.replace(true));
    let r = f();
    INSIDE.with(|c| c.set(was));
    r
}

fn progress_all() -> bool {
    let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    let mut any = false;
    for op in ops.iter_mut() {
        op.progress();
        any = true;
    }
    any
}

/// Completes every outstanding operation (call before anything that could observe buffers).
pub fn complete_all() {
    if OUTSTANDING.load(Ordering::Acquire) == 0 || INSIDE.with(|c| c.get()) {
        return;
    }
    inside(|| loop {
        let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = true;
        for op in ops.iter_mut() {
            done &= op.progress();
        }
        if done {
            let finished: Vec<Op> = ops.drain(..).collect();
            OUTSTANDING.store(0, Ordering::Release);
            drop(ops);
            drop(finished);
            return;
        }
        drop(ops);
        std::thread::yield_now();
    })
}

/// Starts the progress thread and installs the fault handler.
pub fn start() {
    if let Ok(v) = std::env::var("MPISCOPE_OVERLAP_MIN_BYTES") {
        if let Ok(n) = v.trim().parse() {
            MIN_BYTES.store(n, Ordering::Relaxed);
        }
    }
    if guard::install().is_err() {
        return;
    }
    consts();
    let h = std::thread::Builder::new()
        .name("mpiscope-overlap".into())
        .spawn(|| {
            INSIDE.with(|c| c.set(true));
            while !STOP.load(Ordering::Acquire) {
                // Yield the core between passes: on a machine with as many ranks as cores a
                // spinning progress thread steals whole scheduler quanta from the ranks.
                let busy = progress_all();
                std::thread::sleep(std::time::Duration::from_micros(if busy {
                    20
                } else {
                    100
                }));
            }
        });
    if let Ok(h) = h {
        *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        ACTIVE.store(true, Ordering::Release);
        WAS_ACTIVE.store(true, Ordering::Release);
    }
}

/// Completes everything and stops the progress thread.
pub fn stop() {
    complete_all();
    ACTIVE.store(false, Ordering::Release);
    STOP.store(true, Ordering::Release);
    if let Some(h) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = h.join();
    }
}

/// Starts an overlapped Alltoall of `block` bytes per peer on `comm` (already checked
/// eligible); returns once the edge blocks are in place. Falls back to blocking on failure.
pub unsafe fn alltoall(
    sendbuf: *const u8,
    recvbuf: *mut u8,
    block: usize,
    comm: MPI_Comm,
) -> Option<()> {
    let (mut rank, mut size) = (0, 0);
    PMPI_Comm_rank(comm, &mut rank);
    PMPI_Comm_size(comm, &mut size);
    let (rank, size) = (rank as usize, size as usize);
    let total = block * size;
    let page = guard::page_size();
    let ubase = recvbuf as usize;
    let upage = ubase / page * page;
    let span = (ubase + total).div_ceil(page) * page - upage;
    let staging = Staging::new(span).ok()?;
    let schedule = mpiscope_overlap_core::schedule::alltoall(rank, size, block, 4).ok()?;
    let dup = dup_of(comm);
    let send = std::slice::from_raw_parts(sendbuf, total).to_vec();
    let subs: Vec<Range> = (0..size)
        .flat_map(|i| {
            let start = ubase + i * block;
            (start..start + block)
                .step_by(CHUNK)
                .map(move |a| (a, (a + CHUNK).min(start + block)))
        })
        .collect();
    let nsubs = subs.len();
    let protected = pages::protectable(ubase, total, page).ok()?;
    let mut slots = Vec::with_capacity(nsubs);
    for &(s, e) in &subs {
        match TABLE.insert(s, e) {
            Ok(i) => slots.push(i),
            Err(_) => {
                for i in slots {
                    TABLE.free(i);
                }
                return None;
            }
        }
    }
    let mut op = Op {
        comm: dup,
        rank,
        size,
        schedule,
        round: 0,
        reqs: Vec::new(),
        req_sub: Vec::new(),
        send,
        staging,
        ubase,
        upage,
        subs,
        slots,
        released: vec![false; nsubs],
        arrived: vec![false; nsubs],
        protected,
        published: Vec::new(),
    };
    if let Some((lo, hi)) = protected {
        guard::protect(lo, hi, false).ok()?;
    }
    op.post_round();
    op.progress();
    let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    ops.push(op);
    OUTSTANDING.store(ops.len(), Ordering::Release);
    loop {
        let op = ops.last_mut().expect("just pushed");
        op.progress();
        if op.edges_done() {
            return Some(());
        }
        drop(ops);
        std::thread::sleep(std::time::Duration::from_micros(20));
        ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    }
}
