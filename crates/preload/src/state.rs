//! What a thread records with: its state ([`ThreadState`]: block encoders, the arguments of
//! the event being built, counters, caches and scratch buffers), the phase that tells a
//! signal handler whether the state may be touched, and the guard of the call in progress
//! ([`CallGuard`], whose methods are the call path in [`crate::guard`] and the argument
//! helpers in [`crate::args`], [`crate::completions`] and [`crate::fortran`]).
//!
//! A state is touched only by its thread, in its wrappers or in a signal handler running on
//! it, so the hot path needs no atomic read-modify-write: the owner publishes its [`Phase`]
//! with plain stores and compiler fences, which is all a handler on the same thread needs.
//! The state and the guard point to each other while a call is in progress: the guard
//! borrows the state, and the state keeps the guard's address so that a record taken inside
//! the call (a signal, a hang) can write it as an open event from the inputs the wrapper
//! keeps on its stack ([`ThreadState::write_open`]). That is why the two types live here
//! together.
//!
//! States are never freed (see [`crate::threads`]); nothing here allocates on a signal path:
//! [`ThreadState::write_open`] encodes into a block reserved for it, and a peek cuts its
//! lists to the buffer's capacity.

use std::os::raw::c_int;
use std::sync::atomic::{
    compiler_fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering,
};

use mpiscope_trace::{Args, BlockEncoder, ListKind, RawEvent, RawList};

use crate::calls::{self, Counter};
use crate::comms;
use crate::handles;
use crate::mpi::*;
use crate::requests::ReqEntry;

/// Where a thread is with respect to the recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Outside any recorded call: the state may be flushed.
    Idle = 0,
    /// In the recorder's own code around a call (arguments, encoder): nothing may touch the
    /// state; requests are deferred to the next transition.
    Busy = 1,
    /// Inside the real MPI call: the encoder is at rest, and the call's entry is known.
    InCall = 2,
    /// The state belongs to no thread (retired, waiting for reuse).
    Retired = 3,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Idle,
            1 => Phase::Busy,
            2 => Phase::InCall,
            _ => Phase::Retired,
        }
    }
}

/// The phase word of a state: written by its owner only (plain stores), read by handlers.
#[derive(Default)]
pub struct PhaseCell(AtomicU8);

impl PhaseCell {
    /// The current phase.
    #[inline(always)]
    pub fn get(&self) -> Phase {
        Phase::from_u8(self.0.load(Ordering::Relaxed))
    }

    /// Publishes a new phase. The fences keep the compiler from moving the state's other
    /// writes across it, so a signal handler on this thread sees a consistent state.
    #[inline(always)]
    pub fn set(&self, p: Phase) {
        compiler_fence(Ordering::SeqCst);
        self.0.store(p as u8, Ordering::Release);
        compiler_fence(Ordering::SeqCst);
    }
}

/// The latest flush request's number (answered requests are stored in each state); set by
/// the collector ([`crate::collect`]).
pub(crate) static REQUEST: AtomicU64 = AtomicU64::new(0);
/// Whether the latest request wants the calls in progress too.
pub(crate) static REQUEST_OPEN: AtomicBool = AtomicBool::new(false);
/// A deferred request (not a signal number) in [`ThreadState::deferred`].
pub(crate) const DEFERRED_REQUEST: i32 = -1;

/// The kernel's id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Up to eight list arguments of the event being built.
pub struct ListBuf {
    kinds: [ListKind; 8],
    ranges: [(u32, u32); 8],
    pub(crate) n: usize,
    pub(crate) values: Vec<i64>,
}

impl ListBuf {
    fn new() -> Self {
        ListBuf {
            kinds: [ListKind::User; 8],
            ranges: [(0, 0); 8],
            n: 0,
            values: Vec::with_capacity(256),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.n = 0;
        self.values.clear();
    }

    /// Appends a list; with `bounded`, only what fits the buffer's capacity (no allocation).
    pub fn push(&mut self, kind: ListKind, vals: impl IntoIterator<Item = i64>, bounded: bool) {
        if self.n == self.kinds.len() {
            return;
        }
        let start = self.values.len() as u32;
        if bounded {
            let room = self.values.capacity() - self.values.len();
            self.values.extend(vals.into_iter().take(room));
        } else {
            self.values.extend(vals);
        }
        self.kinds[self.n] = kind;
        self.ranges[self.n] = (start, self.values.len() as u32);
        self.n += 1;
    }

    pub(crate) fn raw(&self) -> ([RawList<'_>; 8], usize) {
        let empty: &[i64] = &[];
        let mut out = [RawList {
            kind: ListKind::User,
            values: empty,
        }; 8];
        for (o, (&kind, &(a, b))) in out
            .iter_mut()
            .zip(self.kinds.iter().zip(&self.ranges))
            .take(self.n)
        {
            *o = RawList {
                kind,
                values: &self.values[a as usize..b as usize],
            };
        }
        (out, self.n)
    }
}

/// A peek function: records the input arguments of a call in progress from the copy of
/// them the wrapper keeps on its stack (generated per function, `peek_<name>`).
pub type PeekFn = unsafe fn(&mut CallGuard, *const core::ffi::c_void);

/// Return code seen by argument helpers during a peek: not 0, so that they never ask the MPI
/// library anything (a peek runs in a signal handler, inside the real call).
pub const PEEK_RET: c_int = c_int::MIN;

/// How to record the call a thread is inside (valid while its phase is [`Phase::InCall`]);
/// which call and since when are in [`Watch`].
#[derive(Clone, Copy)]
pub(crate) struct OpenCall {
    /// The wrapper's guard (its stack frame outlives the call): callsite and core.
    pub guard: *mut CallGuard,
    pub peek: Option<PeekFn>,
    pub pack: *const core::ffi::c_void,
}

impl OpenCall {
    const NONE: OpenCall = OpenCall {
        guard: core::ptr::null_mut(),
        peek: None,
        pack: core::ptr::null(),
    };
}

/// The call a thread is inside: which, and since when (its entry ticks also tell one call
/// in progress from the next). Atomics because the keeper thread reads them (relaxed: only
/// while the phase says the thread is inside a call).
#[derive(Default)]
pub(crate) struct Watch {
    pub call: AtomicU32,
    pub t_enter: AtomicU64,
}

/// An MPI call being recorded: created by [`crate::guard::enter`], committed by
/// [`CallGuard::commit`].
pub struct CallGuard {
    pub(crate) ts: *mut ThreadState,
    pub(crate) call: u32,
    pub(crate) ra: usize,
    pub(crate) callsite: u32,
    pub(crate) t_enter: u64,
    pub(crate) t_exit: u64,
    pub(crate) core: u32,
    /// Address of the Fortran request variable (or array) of a Fortran call.
    pub(crate) fortran_handles: usize,
}

impl CallGuard {
    /// The state of the thread making the call.
    #[inline(always)]
    pub(crate) fn ts(&mut self) -> &mut ThreadState {
        // SAFETY: the guard is only created for the current thread's state.
        unsafe { &mut *self.ts }
    }
}

/// Everything a thread needs to record.
pub struct ThreadState {
    /// Thread index in the rank (0: the first thread that called MPI).
    pub index: u16,
    /// The kernel's thread id (where flush requests are sent).
    pub(crate) tid: i32,
    /// Where the thread is (written by the thread only).
    pub(crate) phase: PhaseCell,
    /// A signal that arrived while the thread was [`Phase::Busy`], handled at the next
    /// transition (0: none).
    pub(crate) deferred: AtomicI32,
    /// The last flush request this thread answered.
    pub(crate) answered: AtomicU64,
    /// The call in progress.
    pub(crate) open: OpenCall,
    /// The call in progress as another thread may read it (the hang watchdog).
    pub(crate) watch: Watch,
    /// The call in progress whose hang was reported (its entry ticks).
    pub(crate) hang_reported: AtomicU64,
    /// The call in progress during which the keeper had the record written (its entry
    /// ticks).
    pub(crate) kept: AtomicU64,
    /// Encoder of the current block.
    pub enc: BlockEncoder,
    /// Encoder of the open block written when a record sees a call in progress.
    pub(crate) open_enc: BlockEncoder,
    pub(crate) args: Args,
    pub(crate) lists: ListBuf,
    /// A peek is running: helpers must neither allocate nor ask MPI.
    pub(crate) peeking: bool,
    /// Per-call counters (a table of [`crate::calls`], never freed).
    pub counters: &'static mut [Counter],
    pub(crate) last_defined: u32,
    pub(crate) core_countdown: u32,
    /// CPU time readings around compute bursts.
    pub(crate) burst_clock: crate::cputime::BurstClock,
    callsite_cache: [(usize, u32); 64],
    pub(crate) comm_cache: comms::ThreadCache,
    pub(crate) dtype_cache: handles::DtypeCache,
    pub(crate) ret: c_int,
    // Scratch buffers, grown on demand.
    pub(crate) req_snaps: Vec<Option<ReqEntry>>,
    pub(crate) statuses: Vec<MPI_Status>,
    pub(crate) fstatuses: Vec<MPI_Fint>,
    pub(crate) c_statuses: Vec<MPI_Status>,
    pub(crate) c_requests: Vec<MPI_Request>,
    pub(crate) c_indices: Vec<c_int>,
    pub(crate) tmp: Vec<i64>,
}

/// Room for the open event of one call (its lists are cut to fit).
const OPEN_BLOCK: usize = 16 << 10;

impl ThreadState {
    pub(crate) fn new(index: u16, tid: i32, block: usize) -> Box<ThreadState> {
        Box::new(ThreadState {
            index,
            tid,
            phase: PhaseCell::default(),
            deferred: AtomicI32::new(0),
            answered: AtomicU64::new(0),
            open: OpenCall::NONE,
            watch: Watch::default(),
            hang_reported: AtomicU64::new(0),
            kept: AtomicU64::new(0),
            enc: BlockEncoder::with_cpu(block, index),
            open_enc: BlockEncoder::new(OPEN_BLOCK, index),
            args: Args::EMPTY,
            lists: ListBuf::new(),
            peeking: false,
            counters: calls::new_table(),
            last_defined: u32::MAX,
            core_countdown: 0,
            burst_clock: crate::cputime::BurstClock::default(),
            callsite_cache: [(0, 0); 64],
            comm_cache: comms::ThreadCache::default(),
            dtype_cache: handles::DtypeCache::default(),
            ret: 0,
            req_snaps: Vec::new(),
            statuses: Vec::new(),
            fstatuses: Vec::new(),
            c_statuses: Vec::new(),
            c_requests: Vec::new(),
            c_indices: Vec::new(),
            tmp: Vec::new(),
        })
    }

    /// Takes over a retired state for a new thread.
    pub(crate) fn adopt(&mut self, index: u16, tid: i32) {
        self.index = index;
        self.tid = tid;
        self.enc.set_thread(index);
        self.open_enc.set_thread(index);
        self.open = OpenCall::NONE;
        self.deferred.store(0, Ordering::Relaxed);
        self.last_defined = u32::MAX;
        self.phase.set(Phase::Idle);
    }

    /// Forgets what an exiting thread counted (its counters were absorbed).
    pub(crate) fn retire(&mut self) {
        for c in self.counters.iter_mut() {
            *c = Counter::default();
        }
        self.enc.clear();
    }

    /// True while a wrapper of this thread is between `enter` and `commit`.
    pub fn is_busy(&self) -> bool {
        self.phase.get() != Phase::Idle
    }

    /// Writes the current block (if any) to the rank file.
    pub fn flush(&mut self) {
        flush_encoder(&mut self.enc);
    }

    /// Writes the call in progress as an open block: entry, inputs, and now as the moment of
    /// the record. Runs on this thread, in a signal handler or at a deferred point, while the
    /// phase is [`Phase::InCall`]: no allocation, no MPI call. The arguments of the call are
    /// restored afterwards (the call may go on and be committed).
    pub(crate) fn write_open(&mut self) {
        if self.phase.get() != Phase::InCall {
            return;
        }
        let o = self.open;
        if o.guard.is_null() {
            return;
        }
        // SAFETY: the guard lives in the wrapper's frame, below us on this thread's stack
        // while the phase is InCall.
        let (callsite, core) = unsafe { ((*o.guard).callsite, (*o.guard).core) };
        let call = self.watch.call.load(Ordering::Relaxed);
        let t_enter = self.watch.t_enter.load(Ordering::Relaxed);
        let saved_args = self.args;
        let saved_lists = (self.lists.n, self.lists.values.len());
        let saved_ret = self.ret;
        if let (Some(peek), false) = (o.peek, o.guard.is_null()) {
            self.peeking = true;
            // SAFETY: the guard and the pack live in the wrapper's frame, which is below us on
            // this thread's stack while the phase is InCall.
            unsafe { peek(&mut *o.guard, o.pack) };
            self.peeking = false;
        }
        let (t, ns) = crate::clock::pair();
        let list_store;
        let lists: &[RawList] = if self.lists.n == 0 {
            &[]
        } else {
            list_store = self.lists.raw();
            &list_store.0[..list_store.1]
        };
        let ev = RawEvent {
            call,
            t_enter,
            t_exit: t.max(t_enter),
            callsite,
            core,
            ret: 0,
            skipped: 0,
            args: &self.args,
            lists,
            cpu: None,
        };
        self.open_enc.clear();
        let fits = self.open_enc.push(&ev) || self.open_enc.push(&RawEvent { lists: &[], ..ev });
        if fits {
            crate::sink::write_block(
                self.open_enc
                    .seal_as(mpiscope_trace::block::BlockKind::Open, t, ns),
                0,
            );
        }
        self.open_enc.clear();
        self.args = saved_args;
        self.lists.n = saved_lists.0;
        self.lists.values.truncate(saved_lists.1);
        self.ret = saved_ret;
    }

    /// Answers the latest flush request: this thread's events are written, and the call it
    /// is inside when the request wants it.
    pub(crate) fn answer(&mut self) {
        let id = REQUEST.load(Ordering::Acquire);
        self.flush();
        if REQUEST_OPEN.load(Ordering::Acquire) {
            self.write_open();
        }
        self.answered.store(id, Ordering::Release);
    }

    /// Runs, on this thread, what a signal or request deferred while it was in the
    /// recorder's code.
    #[cold]
    pub(crate) fn run_deferred(&mut self) {
        match self.deferred.swap(0, Ordering::AcqRel) {
            0 => {}
            DEFERRED_REQUEST => self.answer(),
            sig => {
                // Delivered again, now that the state is at rest.
                // SAFETY: signals to this thread.
                unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), gettid(), sig) };
            }
        }
    }

    /// The end of a wrapper: the state is at rest again; a signal that waited for it is
    /// handled now.
    #[inline(always)]
    pub(crate) fn leave(&mut self) {
        self.phase.set(Phase::Idle);
        if self.deferred.load(Ordering::Relaxed) != 0 {
            self.run_deferred();
        }
    }

    /// The callsite id of return address `ra` (the last one per cache slot remembered).
    #[inline]
    pub(crate) fn callsite(&mut self, ra: usize) -> u32 {
        let depth = crate::callsites::DEPTH.load(Ordering::Relaxed);
        if ra == 0 || depth == 0 {
            return 0;
        }
        if depth > 1 {
            return crate::callsites::intern(ra);
        }
        let slot = &mut self.callsite_cache[(ra >> 2) & 63];
        if slot.0 == ra {
            return slot.1;
        }
        let id = crate::callsites::intern(ra);
        *slot = (ra, id);
        id
    }
}

/// Writes an encoder's block (if any) to the rank file.
pub(crate) fn flush_encoder(enc: &mut BlockEncoder) {
    if enc.is_empty() {
        return;
    }
    let (t, ns) = crate::clock::pair();
    let records = enc.records() as u64;
    crate::sink::write_block(enc.seal(t, ns), records);
    enc.clear();
}

/// Writes `ev`, which did not fit the current block: the block first, then the event in a
/// new one (or, larger than a block, in a block of its own).
#[cold]
pub(crate) fn push_slow(enc: &mut BlockEncoder, thread: u16, ev: &RawEvent) {
    flush_encoder(enc);
    if enc.push(ev) {
        return;
    }
    // Larger than a block: a block of its own.
    let mut big = BlockEncoder::new(
        ev.max_encoded_len() + mpiscope_trace::block::BLOCK_HEADER_LEN,
        thread,
    );
    if big.push(ev) {
        let (tk, ns) = crate::clock::pair();
        crate::sink::write_block(big.seal(tk, ns), 1);
    }
}
