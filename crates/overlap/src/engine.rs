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
use mpiscope_overlap_core::schedule::{is_priority, Item, Schedule};

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
/// The user buffers of the outstanding operation (there is at most one: every collective
/// completes the previous one first): send start and end, receive start and end. Read
/// without locking by the memory-release interceptions.
static BUFFERS: [AtomicUsize; 4] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Whether `[start, start + len)` overlaps a buffer of an outstanding operation (for free,
/// realloc and munmap: memory must not be released under a message in flight, nor reused
/// before received pages are moved into it).
pub fn overlaps_outstanding(start: usize, len: usize) -> bool {
    if OUTSTANDING.load(Ordering::Acquire) == 0 {
        return false;
    }
    // No allocation here: this runs inside free().
    let end = start.saturating_add(len.max(1));
    let b = |i: usize| BUFFERS[i].load(Ordering::Acquire);
    (start < b(1) && b(0) < end) || (start < b(3) && b(2) < end)
}
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

/// A user buffer guarded page by page while its sub-messages are in flight: the receive
/// buffer (pages inaccessible until their data is published) or the send buffer (pages
/// read-only until every sub-message reading them has been sent).
struct Guarded {
    /// The whole pages protected, if any.
    protected: Option<Range>,
    /// Sub-messages in user addresses, block by block, piece by piece.
    subs: Vec<Range>,
    /// Their pending-table slots.
    slots: Vec<usize>,
    /// Received (receive buffer) or sent (send buffer).
    done: Vec<bool>,
    /// Bytes outside the protected pages handled (copied into place).
    edged: Vec<bool>,
    /// Data in place and pages accessible: the fault handler lets accesses through.
    released: Vec<bool>,
    /// Protected ranges already reopened.
    opened: Vec<Range>,
}

impl Guarded {
    /// Registers `subs` in the pending table (before any page is protected).
    fn new(subs: Vec<Range>, protected: Option<Range>) -> Option<Self> {
        let mut slots = Vec::with_capacity(subs.len());
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
        let n = subs.len();
        Some(Self {
            protected,
            subs,
            slots,
            done: vec![false; n],
            edged: vec![false; n],
            released: vec![false; n],
            opened: Vec::new(),
        })
    }

    /// For every done sub-message: `edge(start, end)` handles its bytes outside the protected
    /// pages (once); then reopens the protected pages no pending sub-message shares
    /// (`open(start, end)`) and releases every done sub-message whose protected pages are all
    /// open.
    fn publish(&mut self, mut open: impl FnMut(usize, usize), mut edge: impl FnMut(usize, usize)) {
        let page = guard::page_size();
        for i in 0..self.subs.len() {
            if !self.done[i] || self.edged[i] {
                continue;
            }
            let (s, e) = self.subs[i];
            match self.protected {
                Some((lo, hi)) if s.max(lo) < e.min(hi) => {
                    edge(s, s.max(lo));
                    edge(e.min(hi), e);
                }
                _ => edge(s, e),
            }
            self.edged[i] = true;
        }
        if let Some(prot) = self.protected {
            let pending: Vec<Range> = (0..self.subs.len())
                .filter(|&i| !self.done[i])
                .map(|i| self.subs[i])
                .collect();
            let rel = pages::releasable(prot, &pending, page).unwrap_or_default();
            for (s, e) in pages::subtract(&rel, &self.opened) {
                open(s, e);
                self.opened.push((s, e));
                self.opened.sort_unstable();
            }
        }
        for i in 0..self.subs.len() {
            if self.released[i] || !self.edged[i] {
                continue;
            }
            let (s, e) = self.subs[i];
            if let Some((lo, hi)) = self.protected {
                let inner = (s.max(lo), e.min(hi));
                let inner_page = (inner.0 / page * page, inner.1.div_ceil(page) * page);
                if inner.0 < inner.1 && !pages::subtract(&[inner_page], &self.opened).is_empty() {
                    continue;
                }
            }
            TABLE.release(self.slots[i]);
            self.released[i] = true;
        }
    }

    /// Whether the bytes of every sub-message on an unprotected page are in place.
    fn edges_done(&self) -> bool {
        (0..self.subs.len())
            .all(|i| self.edged[i] || !pages::touches_unprotected(self.subs[i], self.protected))
    }

    fn all_released(&self) -> bool {
        self.released.iter().all(|&r| r)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        for &s in &self.slots {
            TABLE.free(s);
        }
    }
}

/// What a request completes: a piece of the receive or of the send buffer (sub index).
#[derive(Clone, Copy)]
enum Target {
    Recv(usize),
    Send(usize),
}

/// Requests in flight and what each completes.
#[derive(Default)]
struct Requests {
    reqs: Vec<MPI_Request>,
    targets: Vec<Target>,
}

impl Requests {
    fn push(&mut self, r: MPI_Request, t: Target) {
        self.reqs.push(r);
        self.targets.push(t);
    }

    /// Tests every request; calls `done` for each completed one; true when none is left.
    fn test(&mut self, mut done: impl FnMut(Target)) -> bool {
        if self.reqs.is_empty() {
            return true;
        }
        let c = consts();
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
        if out != c.undefined {
            for &i in &idx[..out.max(0) as usize] {
                done(self.targets[i as usize]);
            }
        }
        if out == c.undefined || self.reqs.iter().all(|r| *r == c.request_null) {
            self.reqs.clear();
            self.targets.clear();
        }
        self.reqs.is_empty()
    }
}

/// One overlapped Alltoall.
pub struct Op {
    comm: MPI_Comm,
    rank: usize,
    size: usize,
    block: usize,
    schedule: Schedule,
    round: usize,
    /// Sub-messages of a block, `(offset, len)`.
    pieces: Vec<(usize, usize)>,
    /// The head and tail pieces posted by the calling thread ahead of the schedule.
    priority: Requests,
    /// The current round's requests.
    current: Requests,
    /// A round asked for the own block's copy, done after the next messages are posted.
    copy_pending: bool,
    /// User send buffer.
    sbase: usize,
    /// Copies of the send pieces that touch unprotected send pages, by send offset.
    send_copies: Vec<(usize, Vec<u8>)>,
    staging: Staging,
    /// User receive buffer start (bytes) and first page.
    ubase: usize,
    upage: usize,
    recv: Guarded,
    send: Guarded,
}

// SAFETY: MPI handles are used under MPI_THREAD_MULTIPLE; the buffers are owned by the op.
unsafe impl Send for Op {}

impl Op {
    fn stage(&self, user_addr: usize) -> usize {
        self.staging.base() + (user_addr - self.upage)
    }

    fn sub(&self, block: usize, piece: usize) -> usize {
        block * self.pieces.len() + piece
    }

    fn priority_piece(&self, source: usize, piece: usize) -> bool {
        is_priority(source, self.size, piece, self.pieces.len())
    }

    /// Where piece `piece` of block `to` is sent from: the user's (read-only) pages, or a copy
    /// when it touches a page that stays writable.
    fn send_ptr(&self, to: usize, piece: usize) -> *const u8 {
        let at = to * self.block + self.pieces[piece].0;
        match self.send_copies.iter().find(|(o, _)| *o == at) {
            Some((_, c)) => c.as_ptr(),
            None => (self.sbase + at) as *const u8,
        }
    }

    /// Copies of the send pieces `which` selects (by user address range).
    fn copy_sends(&self, which: impl Fn(Range) -> bool) -> Vec<(usize, Vec<u8>)> {
        self.send
            .subs
            .iter()
            .filter(|&&r| which(r))
            .map(|&(s, e)| {
                // SAFETY: the piece lies inside the application's send buffer.
                let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, e - s) };
                (s - self.sbase, bytes.to_vec())
            })
            .collect()
    }

    fn isend(&self, to: usize, piece: usize) -> MPI_Request {
        let c = consts();
        let mut r: MPI_Request = c.request_null;
        // SAFETY: the piece lies inside the send buffer (or its copy), which stays readable
        // until the request completes.
        unsafe {
            PMPI_Isend(
                self.send_ptr(to, piece) as *const _,
                self.pieces[piece].1 as c_int,
                c.byte,
                to as c_int,
                piece as c_int,
                self.comm,
                &mut r,
            )
        };
        r
    }

    fn irecv(&self, from: usize, piece: usize) -> MPI_Request {
        let c = consts();
        let mut r: MPI_Request = c.request_null;
        let at = self.ubase + from * self.block + self.pieces[piece].0;
        // SAFETY: the piece lies inside the staging receive mapping.
        unsafe {
            PMPI_Irecv(
                self.stage(at) as *mut _,
                self.pieces[piece].1 as c_int,
                c.byte,
                from as c_int,
                piece as c_int,
                self.comm,
                &mut r,
            )
        };
        r
    }

    /// Copies piece `piece` of the own block into the staging receive mapping.
    fn copy_own(&mut self, piece: usize) {
        let (o, n) = self.pieces[piece];
        let at = self.rank * self.block + o;
        // SAFETY: both ranges are `n` bytes inside live buffers.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.sbase + at) as *const u8,
                self.stage(self.ubase + at) as *mut u8,
                n,
            )
        };
        let s = self.sub(self.rank, piece);
        self.recv.done[s] = true;
        self.send.done[s] = true;
    }

    /// The pieces of the blocks `source` sends that go ahead of the schedule.
    fn priority_pieces(&self, source: usize) -> Vec<usize> {
        let last = self.pieces.len() - 1;
        let mut v: Vec<usize> = [0, last]
            .into_iter()
            .filter(|&p| self.priority_piece(source, p))
            .collect();
        v.dedup();
        v
    }

    /// Posts the priority pieces (called by the application thread, before returning).
    fn post_priority(&mut self) {
        for piece in self.priority_pieces(self.rank) {
            for to in (0..self.size).filter(|&t| t != self.rank) {
                let r = self.isend(to, piece);
                let s = self.sub(to, piece);
                self.priority.push(r, Target::Send(s));
            }
        }
        let mut sources = vec![0, self.size - 1];
        sources.dedup();
        for from in sources {
            for piece in self.priority_pieces(from) {
                if from == self.rank {
                    self.copy_own(piece);
                } else {
                    let r = self.irecv(from, piece);
                    let s = self.sub(from, piece);
                    self.priority.push(r, Target::Recv(s));
                }
            }
        }
    }

    /// Posts the next rounds of the schedule until one has requests in flight; a round's copy
    /// of the own block is left to [`Op::progress`], after the messages are in flight.
    fn post_round(&mut self) {
        let np = self.pieces.len();
        while self.round < self.schedule.rounds.len() {
            let items = self.schedule.rounds[self.round].clone();
            for item in &items {
                match *item {
                    Item::Send { peer, .. } => {
                        for piece in 0..np {
                            if !self.priority_piece(self.rank, piece) {
                                let r = self.isend(peer, piece);
                                let s = self.sub(peer, piece);
                                self.current.push(r, Target::Send(s));
                            }
                        }
                    }
                    Item::Recv { peer, .. } => {
                        for piece in 0..np {
                            if !self.priority_piece(peer, piece) {
                                let r = self.irecv(peer, piece);
                                let s = self.sub(peer, piece);
                                self.current.push(r, Target::Recv(s));
                            }
                        }
                    }
                    Item::Copy { .. } => {}
                }
            }
            if items.iter().any(|i| matches!(i, Item::Copy { .. })) {
                self.copy_pending = true;
            }
            self.round += 1;
            if !self.current.reqs.is_empty() {
                break;
            }
        }
    }

    fn mark(&mut self, t: Target) {
        match t {
            Target::Recv(s) => self.recv.done[s] = true,
            Target::Send(s) => self.send.done[s] = true,
        }
    }

    /// Tests the requests (the schedule's only when `schedule`), posts the next round when the
    /// current one is complete, publishes what became complete; true when everything is done.
    fn progress(&mut self, schedule: bool) -> bool {
        let mut finished = Vec::new();
        let prio_empty = self.priority.test(|t| finished.push(t));
        let mut cur_empty = self.current.reqs.is_empty();
        if schedule {
            cur_empty = self.current.test(|t| finished.push(t));
            if cur_empty && self.round < self.schedule.rounds.len() {
                self.post_round();
                cur_empty = self.current.reqs.is_empty();
            }
        }
        if schedule && self.copy_pending {
            self.copy_pending = false;
            for piece in 0..self.pieces.len() {
                if !self.recv.done[self.sub(self.rank, piece)] {
                    self.copy_own(piece);
                }
            }
        }
        for t in finished {
            self.mark(t);
        }
        self.publish();
        prio_empty
            && cur_empty
            && self.round >= self.schedule.rounds.len()
            && self.recv.all_released()
            && self.send.all_released()
    }

    fn publish(&mut self) {
        let (base, upage) = (self.staging.base(), self.upage);
        let stage = move |a: usize| base + (a - upage);
        self.recv.publish(
            |s, e| guard::publish(stage(s), s, e - s).expect("mremap over the receive buffer"),
            |a, b| {
                if a < b {
                    // SAFETY: both ranges lie in live buffers of `b - a` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(stage(a) as *const u8, a as *mut u8, b - a)
                    }
                }
            },
        );
        self.send.publish(
            |s, e| guard::protect(s, e, true).expect("mprotect of the send buffer"),
            |_, _| {},
        );
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
        op.progress(true);
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
            done &= op.progress(true);
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
            // Sleep what is asked, not the default 50 us of timer slack more: a pass of the
            // progress loop is one step of every rendezvous in flight.
            // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
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
/// eligible); returns once the pieces on the receive buffer's unaligned edge pages are in
/// place. Returns `None`, having changed nothing, when it cannot start (the caller then runs
/// the blocking collective).
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
    let sbase = sendbuf as usize;
    let upage = ubase / page * page;
    let span = (ubase + total).div_ceil(page) * page - upage;
    let staging = Staging::new(span).ok()?;
    let schedule = mpiscope_overlap_core::schedule::alltoall(rank, size, block, 4).ok()?;
    let pieces = mpiscope_overlap_core::schedule::pieces(block, page, CHUNK);
    let layout = |base: usize| -> Vec<Range> {
        (0..size)
            .flat_map(|i| {
                pieces
                    .iter()
                    .map(move |&(o, n)| (base + i * block + o, base + i * block + o + n))
            })
            .collect()
    };
    let rprot = pages::protectable(ubase, total, page).ok()?;
    let sprot = pages::protectable(sbase, total, page).ok()?;
    let recv = Guarded::new(layout(ubase), rprot)?;
    let send = Guarded::new(layout(sbase), sprot)?;
    // Send pieces on pages that stay writable are copied now: the application may change
    // them as soon as the call returns.
    let dup = dup_of(comm);
    let mut op = Op {
        comm: dup,
        rank,
        size,
        block,
        schedule,
        round: 0,
        pieces,
        priority: Requests::default(),
        current: Requests::default(),
        copy_pending: false,
        sbase,
        send_copies: Vec::new(),
        staging,
        ubase,
        upage,
        recv,
        send,
    };
    if let Some((lo, hi)) = rprot {
        guard::adopt(lo, op.stage(lo), hi - lo).ok()?;
    }
    op.send_copies = op.copy_sends(|r| pages::touches_unprotected(r, sprot));
    // The priority pieces leave first (they are sent from copies), so the peers waiting on
    // them are not delayed by the send buffer's protection.
    op.post_priority();
    if let Some((lo, hi)) = sprot {
        if guard::write_protect(lo, hi).is_err() {
            // The priority messages are out, so the operation goes on: from a copy of the
            // whole send buffer.
            op.send.protected = None;
            op.send_copies = op.copy_sends(|_| true);
        }
    }
    op.progress(false);
    let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    for (a, v) in BUFFERS
        .iter()
        .zip([sbase, sbase + total, ubase, ubase + total])
    {
        a.store(v, Ordering::Release);
    }
    ops.push(op);
    OUTSTANDING.store(ops.len(), Ordering::Release);
    loop {
        let op = ops.last_mut().expect("just pushed");
        op.progress(false);
        if op.recv.edges_done() {
            return Some(());
        }
        drop(ops);
        std::thread::yield_now();
        ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    }
}
