//! The per-call path: deciding, timing, collecting arguments, encoding.
//!
//! Generated wrappers do, in order: [`caller_address!`], [`enter`] (which returns `None`
//! when the call is not recorded, and the wrapper then calls the real function directly),
//! `pre_*` (snapshots of handles the call will change), [`CallGuard::start`], the real call,
//! [`CallGuard::stop`], `post_*` (argument collection) and [`CallGuard::commit`].
//!
//! Each thread owns a [`ThreadState`]: its block encoder, per-function counters and scratch
//! buffers. The thread that first calls MPI finds its state through one compare with a
//! global, other threads through a thread-local.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicU8, Ordering};

use mpiscope_trace::{
    Args, BlockEncoder, ListKind, RawEvent, RawList, Slot, NO_CORE, NO_VALUE, PEER_ANY, PEER_NULL,
    PEER_ROOT, PEER_UNKNOWN,
};

use crate::comms::{self, CommInfo};
use crate::config::CoreMode;
use crate::consts::Consts;
use crate::handles;
use crate::mpi::*;
use crate::requests::{self, ReqEntry};
use crate::session;
use crate::threads::{current, Phase, PhaseCell};
use crate::wrappers::{CALL_NAMES, FORTRAN_BASE};

/// Number of call ids: C functions, then their Fortran bindings.
pub const NCALLS: usize = 2 * CALL_NAMES.len();

/// Mode of a call id: not recorded.
pub const MODE_OFF: u8 = 0;
/// Mode of a call id: every call recorded.
pub const MODE_ALL: u8 = 1;
/// Mode of a call id: one call in `SAMPLE_EVERY[id]` recorded.
pub const MODE_SAMPLED: u8 = 2;

/// Current mode of each call id (all off until the library is configured).
pub static MODES: [AtomicU8; NCALLS] = [const { AtomicU8::new(MODE_OFF) }; NCALLS];
/// Configured mode of each call id (restored by `MPI_Pcontrol(1)`).
pub static CONFIGURED: [AtomicU8; NCALLS] = [const { AtomicU8::new(MODE_OFF) }; NCALLS];
/// Sampling period of each call id.
pub static SAMPLE_EVERY: [AtomicU64; NCALLS] = [const { AtomicU64::new(1) }; NCALLS];
/// How often the core is read.
pub static CORE_MODE: AtomicU8 = AtomicU8::new(1);
/// A block whose first event is older than this many ticks is written at the next event.
pub static FLUSH_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Recording window in ticks: events entering outside [start, end) are counted, not written.
pub static WINDOW_START: AtomicU64 = AtomicU64::new(0);
/// End of the recording window.
pub static WINDOW_END: AtomicU64 = AtomicU64::new(u64::MAX);

static mut CONSTS: core::mem::MaybeUninit<Consts> = core::mem::MaybeUninit::zeroed();

/// Values of `mpi.h` macro constants.
#[inline(always)]
pub fn consts() -> &'static Consts {
    // SAFETY: filled by the library constructor before any wrapper runs; plain data.
    unsafe { &*(core::ptr::addr_of!(CONSTS) as *const Consts) }
}

/// Reads the constants from the C shim.
pub(crate) fn load_consts() {
    // SAFETY: the shim writes every field of the struct.
    unsafe { crate::consts::mpiscope_get_consts(core::ptr::addr_of_mut!(CONSTS) as *mut Consts) };
}

/// The return address of the current function: the callsite of the MPI call.
///
/// Must be expanded directly in the exported wrapper (frame pointers are forced for this
/// crate, so the frame record holds the caller's return address).
#[macro_export]
macro_rules! caller_address {
    () => {{
        #[cfg(target_arch = "x86_64")]
        let ra: usize = {
            let fp: usize;
            // SAFETY: reads the frame pointer register.
            unsafe { core::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags)) };
            // SAFETY: with frame pointers, [rbp + 8] is this function's return address.
            if fp == 0 { 0 } else { unsafe { *((fp + 8) as *const usize) } }
        };
        #[cfg(target_arch = "aarch64")]
        let ra: usize = {
            let fp: usize;
            // SAFETY: reads the frame pointer register.
            unsafe { core::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags)) };
            // SAFETY: with frame pointers, [x29 + 8] is the saved link register.
            if fp == 0 { 0 } else { unsafe { *((fp + 8) as *const usize) } }
        };
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let ra: usize = 0;
        ra
    }};
}
pub use caller_address;

/// Counters of one call id on one thread.
#[derive(Clone, Copy, Default)]
pub struct Counter {
    /// Calls made (while tracing was active).
    pub count: u64,
    /// Calls recorded as events.
    pub recorded: u64,
    /// Ticks spent in recorded calls.
    pub ticks: u64,
    /// Calls not recorded since the last recorded one.
    pub skipped: u64,
    /// Position in the sampling period.
    pub phase: u64,
}

/// Up to eight list arguments of the event being built.
pub struct ListBuf {
    kinds: [ListKind; 8],
    ranges: [(u32, u32); 8],
    n: usize,
    values: Vec<i64>,
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

    fn clear(&mut self) {
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

    fn raw(&self) -> ([RawList<'_>; 8], usize) {
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
    pub call: std::sync::atomic::AtomicU32,
    pub t_enter: AtomicU64,
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
    args: Args,
    lists: ListBuf,
    /// A peek is running: helpers must neither allocate nor ask MPI.
    peeking: bool,
    /// Per-call counters.
    pub counters: Box<[Counter]>,
    last_defined: u32,
    core_countdown: u32,
    callsite_cache: [(usize, u32); 64],
    pub(crate) comm_cache: comms::ThreadCache,
    pub(crate) dtype_cache: handles::DtypeCache,
    ret: c_int,
    // Scratch buffers, grown on demand.
    req_snaps: Vec<Option<ReqEntry>>,
    statuses: Vec<MPI_Status>,
    fstatuses: Vec<MPI_Fint>,
    c_statuses: Vec<MPI_Status>,
    c_requests: Vec<MPI_Request>,
    c_indices: Vec<c_int>,
    tmp: Vec<i64>,
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
            enc: BlockEncoder::new(block, index),
            open_enc: BlockEncoder::new(OPEN_BLOCK, index),
            args: Args::EMPTY,
            lists: ListBuf::new(),
            peeking: false,
            counters: vec![Counter::default(); NCALLS].into_boxed_slice(),
            last_defined: u32::MAX,
            core_countdown: 0,
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
}

/// True when this thread is between `enter` and `commit` of a recorded call.
pub fn inside_recorded_call() -> bool {
    // SAFETY: the state belongs to this thread.
    current().is_some_and(|p| unsafe { (*p).is_busy() })
}

// ---------------------------------------------------------------- the call path

/// State kept between the two halves of a wrapper.
#[derive(Default, Clone, Copy)]
pub struct Snap {
    /// Request looked up before a completion call.
    pub req: Option<ReqEntry>,
    /// Number of requests snapshotted into the thread's scratch.
    pub n: usize,
    /// Communicator (freed communicator, matched message's communicator).
    pub comm: Option<&'static CommInfo>,
    /// A handle value.
    pub handle: usize,
}

impl Snap {
    /// The communicator of the snapshot.
    pub fn comm_info(&self) -> Option<&'static CommInfo> {
        self.comm
    }
}

/// An MPI call being recorded.
pub struct CallGuard {
    ts: *mut ThreadState,
    call: u32,
    ra: usize,
    callsite: u32,
    t_enter: u64,
    t_exit: u64,
    core: u32,
    /// Address of the Fortran request variable (or array) of a Fortran call.
    fortran_handles: usize,
}

/// Decides whether this call is recorded. `None`: call the real function and return.
#[inline(always)]
pub fn enter(call: u32, ra: usize) -> Option<CallGuard> {
    // SAFETY: `call` is a generated id below NCALLS.
    let mode = unsafe { MODES.get_unchecked(call as usize) }.load(Ordering::Relaxed);
    if mode == MODE_OFF {
        return None;
    }
    let ts = current()?;
    // SAFETY: the state belongs to this thread; the phase excludes re-entry.
    let t = unsafe { &mut *ts };
    if t.phase.get() != Phase::Idle {
        return None;
    }
    // SAFETY: call < NCALLS.
    let c = unsafe { t.counters.get_unchecked_mut(call as usize) };
    c.count += 1;
    if mode == MODE_SAMPLED {
        c.phase += 1;
        // SAFETY: call < NCALLS.
        if c.phase < unsafe { SAMPLE_EVERY.get_unchecked(call as usize) }.load(Ordering::Relaxed) {
            c.skipped += 1;
            return None;
        }
        c.phase = 0;
    }
    t.phase.set(Phase::Busy);
    t.args.reset();
    t.lists.clear();
    t.ret = 0;
    let g = CallGuard {
        ts,
        call,
        ra,
        callsite: 0,
        t_enter: 0,
        t_exit: 0,
        core: NO_CORE,
        fortran_handles: 0,
    };
    crate::plugin::pre(&g);
    Some(g)
}

/// Reads a value MPI wrote through an output argument.
///
/// A volatile read behind `black_box`: with plain reads, rustc 1.95 (LLVM) compiled the
/// MPICH build of `post_MPI_Test` so that the recorded flag was the constant 0 while the
/// branch on it used the real value (MPI_Test recorded flag=0 next to a completion; caught
/// by the end-to-end tests, and dependent on the build). Outputs are read once per call,
/// so this costs nothing measurable.
///
/// # Safety
/// `p` is valid for reads and MPI initialized it.
#[inline(always)]
pub unsafe fn read_output<T: Copy>(p: *const T) -> T {
    // SAFETY: the caller's contract.
    core::hint::black_box(unsafe { p.read_volatile() })
}

impl CallGuard {
    #[inline(always)]
    fn ts(&mut self) -> &mut ThreadState {
        // SAFETY: the guard is only created for the current thread's state.
        unsafe { &mut *self.ts }
    }

    /// Call id.
    pub fn call(&self) -> u32 {
        self.call
    }

    /// Entry and exit ticks.
    pub fn times(&self) -> (u64, u64) {
        (self.t_enter, self.t_exit)
    }

    /// Reads the entry time; the call is now in progress (a record taken before it returns
    /// shows it with the arguments known before the call).
    #[inline(always)]
    pub fn start(&mut self) {
        self.start_with(None, core::ptr::null());
    }

    /// As [`CallGuard::start`], with the function that records the call's inputs from
    /// `pack`, a copy of them on the wrapper's stack, if a record sees the call in progress.
    #[inline(always)]
    pub fn start_open(&mut self, peek: PeekFn, pack: *const core::ffi::c_void) {
        self.start_with(Some(peek), pack);
    }

    #[inline(always)]
    fn start_with(&mut self, peek: Option<PeekFn>, pack: *const core::ffi::c_void) {
        let (call, ra) = (self.call, self.ra);
        let every = CORE_MODE.load(Ordering::Relaxed);
        let t = self.ts();
        // The call's definition and callsite are made now, not in a signal handler.
        if call != t.last_defined {
            session::define_call(call);
            t.last_defined = call;
        }
        let callsite = t.callsite(ra);
        let (t_enter, core) = if every != 0 && t.core_countdown == 0 {
            t.core_countdown = if every == 2 { 0 } else { 15 };
            crate::clock::ticks_and_core()
        } else {
            t.core_countdown = t.core_countdown.saturating_sub(1);
            (crate::clock::ticks(), NO_CORE)
        };
        self.callsite = callsite;
        self.core = core;
        self.t_enter = t_enter;
        let guard: *mut CallGuard = self;
        let t = self.ts();
        t.open = OpenCall { guard, peek, pack };
        t.watch.call.store(call, Ordering::Relaxed);
        t.watch.t_enter.store(t_enter, Ordering::Relaxed);
        t.phase.set(Phase::InCall);
        if t.deferred.load(Ordering::Relaxed) != 0 {
            crate::signals::run_deferred();
        }
    }

    /// Reads the exit time.
    #[inline(always)]
    pub fn stop(&mut self) {
        self.t_exit = crate::clock::ticks();
        self.ts().phase.set(Phase::Busy);
    }

    /// Sets a fixed argument.
    #[inline(always)]
    pub fn set(&mut self, slot: Slot, v: i64) {
        self.ts().args.set(slot, v);
    }

    /// Appends a list argument.
    pub fn list(&mut self, kind: ListKind, vals: impl IntoIterator<Item = i64>) {
        let t = self.ts();
        let bounded = t.peeking;
        t.lists.push(kind, vals, bounded);
    }

    /// Stores the return code of the real call (first statement of every post function).
    #[inline(always)]
    pub fn set_ret(&mut self, ret: c_int) {
        self.ts().ret = ret;
    }

    /// Return code of the real call (set by the generated post function).
    pub fn ret(&self) -> c_int {
        // SAFETY: see `ts`.
        unsafe { (*self.ts).ret }
    }

    /// Records the outcome and writes the event.
    #[inline(always)]
    pub fn commit(mut self, ret: c_int) {
        let call = self.call;
        let (t_enter, t_exit) = (self.t_enter, self.t_exit);
        let in_window = t_enter >= WINDOW_START.load(Ordering::Relaxed)
            && t_enter < WINDOW_END.load(Ordering::Relaxed);
        crate::plugin::post(&mut self);
        let (callsite, core) = (self.callsite, self.core);
        let t = self.ts();
        // SAFETY: call < NCALLS.
        let c = unsafe { t.counters.get_unchecked_mut(call as usize) };
        if !in_window {
            c.skipped += 1;
            t.leave();
            return;
        }
        c.recorded += 1;
        c.ticks += t_exit.wrapping_sub(t_enter);
        let skipped = core::mem::take(&mut c.skipped);
        let list_store;
        let lists: &[RawList] = if t.lists.n == 0 {
            &[]
        } else {
            list_store = t.lists.raw();
            &list_store.0[..list_store.1]
        };
        let ev = RawEvent {
            call,
            t_enter,
            t_exit,
            callsite,
            core,
            ret,
            skipped,
            args: &t.args,
            lists,
        };
        if !t.enc.push(&ev) {
            push_slow(&mut t.enc, t.index, &ev);
        }
        // A block older than the flush interval is written now: a rank killed later loses
        // at most that much of its record.
        if t_exit.wrapping_sub(t.enc.base_ticks()) > FLUSH_TICKS.load(Ordering::Relaxed) {
            flush_encoder(&mut t.enc);
        }
        t.leave();
    }

    // ------------------------------------------------------------ argument helpers

    /// The call's communicator: sets the `Comm` slot.
    #[inline(always)]
    /// # Safety: `comm` as the program passed it to MPI.
    pub unsafe fn comm(&mut self, comm: MPI_Comm) -> Option<&'static CommInfo> {
        if comm == consts().comm_world {
            let w = comms::world();
            if let Some(ci) = w {
                self.set(Slot::Comm, i64::from(ci.id));
            }
            return w;
        }
        let ok = self.ret() == 0;
        let t = self.ts();
        // An unknown communicator is registered only after a successful call; a peek only
        // looks (it may run in a signal handler).
        let ci = if t.peeking {
            comms::peek(&mut t.comm_cache, comm)?
        } else {
            comms::lookup(&mut t.comm_cache, comm, ok)?
        };
        t.args.set(Slot::Comm, i64::from(ci.id));
        Some(ci)
    }

    /// The window's communicator: sets the `Comm` slot.
    pub fn win(&mut self, win: MPI_Win) -> Option<&'static CommInfo> {
        let ci = handles::win_comm(win)?;
        self.set(Slot::Comm, i64::from(ci.id));
        Some(ci)
    }

    /// A peer rank of `ci`, as a world rank.
    #[inline]
    pub fn peer(&mut self, slot: Slot, rank: c_int, ci: Option<&'static CommInfo>) {
        let k = consts();
        let v = if rank == k.any_source {
            PEER_ANY
        } else if rank == k.proc_null {
            PEER_NULL
        } else {
            match ci {
                Some(ci) => ci.peer_world(rank),
                None => PEER_UNKNOWN,
            }
        };
        self.set(slot, v);
    }

    /// The root of a rooted collective; returns whether this process is the root.
    pub fn root(&mut self, root: c_int, ci: Option<&'static CommInfo>) -> bool {
        let k = consts();
        let Some(ci) = ci else {
            self.set(Slot::Root, PEER_UNKNOWN);
            return false;
        };
        if ci.inter {
            if root == k.root {
                self.set(Slot::Root, PEER_ROOT);
                return true;
            }
            if root == k.proc_null {
                self.set(Slot::Root, PEER_NULL);
                return false;
            }
            self.set(Slot::Root, ci.peer_world(root));
            return false;
        }
        self.set(Slot::Root, ci.local_world(root));
        root == ci.my_rank
    }

    /// A buffer of `count` elements of `dtype`.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn count(
        &mut self,
        count_slot: Slot,
        size_slot: Slot,
        bytes_slot: Slot,
        count: i64,
        dtype: MPI_Datatype,
    ) {
        let ok = self.ret() == 0;
        let t = self.ts();
        t.args.set(count_slot, count);
        // SAFETY: the library is queried only after it accepted the handle (`ok`).
        if let Some(size) = unsafe { handles::dtype_size(&mut t.dtype_cache, dtype, ok) } {
            t.args.set(size_slot, size);
            t.args.set(bytes_slot, count.saturating_mul(size));
        }
    }

    fn peers_of(ci: Option<&'static CommInfo>) -> Option<usize> {
        ci.map(|c| {
            if c.inter {
                c.remote.len()
            } else {
                c.size as usize
            }
        })
    }

    /// Per-peer counts of one datatype (v-collectives).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn counts<T: Copy + Into<i64>>(
        &mut self,
        kind: ListKind,
        size_slot: Slot,
        bytes_slot: Slot,
        counts: *const T,
        dtype: MPI_Datatype,
        ci: Option<&'static CommInfo>,
    ) {
        let Some(n) = Self::peers_of(ci) else { return };
        if counts.is_null() || self.ret() != 0 {
            return;
        }
        // SAFETY: MPI requires `counts` to hold one entry per peer here.
        let vals = unsafe { core::slice::from_raw_parts(counts, n) };
        let total: i64 = vals.iter().map(|&v| v.into()).sum();
        self.list(kind, vals.iter().map(|&v| v.into()));
        let t = self.ts();
        if let Some(size) = handles::dtype_size(&mut t.dtype_cache, dtype, true) {
            t.args.set(size_slot, size);
            t.args.set(bytes_slot, total.saturating_mul(size));
        }
    }

    /// Per-peer counts and datatypes (`Alltoallw`).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn counts_w<T: Copy + Into<i64>>(
        &mut self,
        kind: ListKind,
        sizes_kind: ListKind,
        bytes_slot: Slot,
        counts: *const T,
        types: *const MPI_Datatype,
        ci: Option<&'static CommInfo>,
    ) {
        let Some(n) = Self::peers_of(ci) else { return };
        if counts.is_null() || types.is_null() || self.ret() != 0 {
            return;
        }
        // SAFETY: MPI requires one entry per peer.
        let (vals, tys) = unsafe {
            (
                core::slice::from_raw_parts(counts, n),
                core::slice::from_raw_parts(types, n),
            )
        };
        let t = self.ts();
        let mut sizes = core::mem::take(&mut t.tmp);
        sizes.clear();
        sizes.extend(
            tys.iter()
                .map(|&d| handles::dtype_size(&mut t.dtype_cache, d, true).unwrap_or(0)),
        );
        let total: i64 = vals.iter().zip(&sizes).map(|(&c, &s)| c.into() * s).sum();
        t.lists.push(kind, vals.iter().map(|&v| v.into()), false);
        t.lists.push(sizes_kind, sizes.iter().copied(), false);
        t.tmp = sizes;
        self.set(bytes_slot, total);
    }

    /// A reduction operation.
    pub fn op(&mut self, op: MPI_Op) {
        let id = handles::op_id(op);
        self.set(Slot::Op, i64::from(id));
    }

    /// Reads a boolean output.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn flag(&mut self, flag: *mut c_int) -> bool {
        if flag.is_null() || self.ret() != 0 {
            return false;
        }
        // SAFETY: MPI wrote the flag.
        let v = unsafe { read_output(flag) };
        let f = v != 0;
        self.set(Slot::Flag, i64::from(f));
        f
    }

    /// Reads a thread-level output.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn level_out(&mut self, provided: *mut c_int) {
        if !provided.is_null() && self.ret() == 0 {
            // SAFETY: MPI wrote it.
            let v = unsafe { read_output(provided) };
            self.set(Slot::Level, i64::from(v));
        }
    }

    /// Decodes a status: source (as a world rank, through `ci`), tag and bytes.
    pub fn status(&mut self, st: *mut MPI_Status, ci: Option<&'static CommInfo>, ret: c_int) {
        if let Some((src, tag, bytes)) = decode_status(st, ci, ret) {
            if let Some(s) = src {
                self.set(Slot::StatusSource, s);
                self.set(Slot::StatusTag, tag);
            }
            if let Some(b) = bytes {
                self.set(Slot::StatusBytes, b);
            }
        }
    }

    /// A request created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_request(
        &mut self,
        req: *mut MPI_Request,
        recv: bool,
        persistent: bool,
        ci: Option<&'static CommInfo>,
        ret: c_int,
    ) {
        if ret != 0 || req.is_null() {
            return;
        }
        // SAFETY: MPI wrote the request.
        let h = unsafe { read_output(req) };
        if h == consts().request_null {
            return;
        }
        let id = requests::create(h, self.handle_addr(req), recv, persistent, ci);
        self.set(Slot::Request, id as i64);
    }

    /// A communicator created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_comm(&mut self, out: *mut MPI_Comm, ret: c_int) {
        if ret != 0 || out.is_null() {
            return;
        }
        // SAFETY: MPI wrote the handle.
        let c = unsafe { read_output(out) };
        if c == consts().comm_null {
            return;
        }
        if let Some(ci) = comms::register(c) {
            self.set(Slot::NewComm, i64::from(ci.id));
        }
    }

    /// A window created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_win(&mut self, out: *mut MPI_Win, ci: Option<&'static CommInfo>, ret: c_int) {
        if ret == 0 && !out.is_null() {
            // SAFETY: MPI wrote the handle.
            handles::win_created(unsafe { read_output(out) }, ci);
        }
    }

    /// Snapshot before `MPI_Win_free`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn win_snap(&mut self, win: *mut MPI_Win) -> Snap {
        let mut s = Snap::default();
        if !win.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            let w = unsafe { *win };
            s.handle = w as usize;
            s.comm = handles::win_comm(w);
            if let Some(ci) = s.comm {
                self.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// After `MPI_Win_free`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn win_freed(&mut self, s: &Snap, ret: c_int) {
        if ret == 0 {
            handles::win_freed(s.handle);
        }
    }

    /// A matched message created by `MPI_Mprobe` / `MPI_Improbe`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_message(
        &mut self,
        msg: *mut MPI_Message,
        ci: Option<&'static CommInfo>,
        ret: c_int,
    ) {
        if ret == 0 && !msg.is_null() {
            // SAFETY: MPI wrote the handle.
            handles::message_matched(unsafe { read_output(msg) }, ci);
        }
    }

    /// Snapshot before `MPI_Mrecv` / `MPI_Imrecv`: the message's communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn message_snap(&mut self, msg: *mut MPI_Message) -> Snap {
        let mut s = Snap::default();
        if !msg.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            s.comm = handles::message_taken(unsafe { *msg });
            if let Some(ci) = s.comm {
                self.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// Snapshot before a call that releases a communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn comm_snap(&mut self, comm: *mut MPI_Comm) -> Snap {
        let mut s = Snap::default();
        if !comm.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            let c = unsafe { *comm };
            s.handle = c as usize;
            let t = self.ts();
            s.comm = comms::lookup(&mut t.comm_cache, c, true);
            if let Some(ci) = s.comm {
                t.args.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// After a call that releases a communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn comm_freed(&mut self, s: &Snap, ret: c_int) {
        if ret == 0 && s.handle != 0 {
            comms::release(s.handle);
        }
    }

    // ------------------------------------------------------------ requests

    /// Snapshot of a request before a completion call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap(&mut self, req: *mut MPI_Request) -> Snap {
        if req.is_null() {
            return Snap::default();
        }
        let addr = self.handle_addr(req);
        // SAFETY: valid pointer by MPI's contract.
        self.req_snap_at(unsafe { *req }, addr)
    }

    /// Where the program keeps a handle: the address it passed, for C calls; for Fortran
    /// calls (whose C views are the recorder's copies) the Fortran variable's address.
    fn handle_addr<T>(&self, p: *mut T) -> usize {
        if self.call >= FORTRAN_BASE {
            self.fortran_handles
        } else {
            p as usize
        }
    }

    /// Records where a Fortran call keeps its request handle(s) (the INTEGER or the array).
    pub fn fortran_handles_at(&mut self, f: *mut core::ffi::c_void) {
        self.fortran_handles = f as usize;
    }

    /// Snapshot of a request passed by value.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap_value(&mut self, req: MPI_Request) -> Snap {
        self.req_snap_at(req, 0)
    }

    fn req_snap_at(&mut self, req: MPI_Request, addr: usize) -> Snap {
        let mut s = Snap::default();
        if req != consts().request_null {
            s.handle = req as usize;
            s.req = requests::lookup(req, addr);
            if let Some(e) = &s.req {
                self.set(Slot::Request, e.id as i64);
            }
        }
        s
    }

    /// Snapshots of an array of requests, kept in the thread's scratch.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap_array(&mut self, count: c_int, reqs: *mut MPI_Request) -> Snap {
        let n = if count > 0 && !reqs.is_null() {
            count as usize
        } else {
            0
        };
        let null = consts().request_null;
        let fortran = (self.call >= FORTRAN_BASE).then_some(self.fortran_handles);
        let t = self.ts();
        t.req_snaps.clear();
        // Ids already matched: two elements with one shared handle are two requests.
        let mut taken = core::mem::take(&mut t.tmp);
        taken.clear();
        for i in 0..n {
            // SAFETY: MPI requires `count` valid entries.
            let h = unsafe { *reqs.add(i) };
            let addr = match fortran {
                Some(0) => 0,
                Some(base) => base + i * core::mem::size_of::<MPI_Fint>(),
                None => reqs.wrapping_add(i) as usize,
            };
            let found = if h == null {
                None
            } else {
                requests::lookup_shared(h, addr, &taken)
            };
            if let Some((e, true)) = &found {
                taken.push(e.id as i64);
            }
            t.req_snaps.push(found.map(|(e, _)| e));
        }
        t.tmp = taken;
        self.set(Slot::ArrayLen, n as i64);
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        t.lists.push(
            ListKind::Requests,
            snaps.iter().map(|e| e.map(|e| e.id as i64).unwrap_or(0)),
            false,
        );
        t.req_snaps = snaps;
        Snap {
            n,
            ..Snap::default()
        }
    }

    fn completion_values(e: &ReqEntry, st: *mut MPI_Status, ret: c_int) -> [i64; 4] {
        if e.recv {
            if let Some((src, tag, bytes)) = decode_status(st, e.comm, ret) {
                return [
                    e.id as i64,
                    src.unwrap_or(NO_VALUE),
                    if src.is_some() { tag } else { NO_VALUE },
                    bytes.unwrap_or(NO_VALUE),
                ];
            }
        }
        [e.id as i64, NO_VALUE, NO_VALUE, NO_VALUE]
    }

    /// `MPI_Wait` / `MPI_Test` completed the snapshotted request.
    pub fn complete_one(&mut self, s: &Snap, st: *mut MPI_Status, ret: c_int) {
        let Some(e) = s.req else { return };
        if e.recv {
            self.status(st, e.comm, ret);
        }
        if !e.persistent {
            requests::complete(s.handle, e.id);
        }
    }

    /// `MPI_Request_get_status` found the request complete (the request stays).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_peek(&mut self, s: &Snap, st: *mut MPI_Status, ret: c_int) {
        if let Some(e) = s.req {
            if e.recv {
                self.status(st, e.comm, ret);
            }
        }
    }

    /// `MPI_Waitany` / `MPI_Testany` completed entry `*index`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_any(
        &mut self,
        s: &Snap,
        index: *mut c_int,
        st: *mut MPI_Status,
        ret: c_int,
    ) {
        if index.is_null() {
            return;
        }
        // SAFETY: MPI wrote the index.
        let i = unsafe { read_output(index) };
        self.set(Slot::Index, i64::from(i));
        if i == consts().undefined || i < 0 || i as usize >= s.n {
            return;
        }
        let t = self.ts();
        let Some(e) = t.req_snaps[i as usize] else {
            return;
        };
        self.set(Slot::Request, e.id as i64);
        if e.recv {
            self.status(st, e.comm, ret);
        }
        if !e.persistent {
            requests::complete_entry(&e);
        }
    }

    /// `MPI_Waitall` / `MPI_Testall` completed every request.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_all(&mut self, s: &Snap, sts: *mut MPI_Status, ret: c_int) {
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        let mut vals = core::mem::take(&mut t.tmp);
        vals.clear();
        for (i, e) in snaps.iter().enumerate().take(s.n) {
            let Some(e) = e else { continue };
            let st = if sts.is_null() {
                sts
            } else {
                unsafe { sts.add(i) }
            };
            vals.extend(Self::completion_values(e, st, ret));
            if !e.persistent {
                requests::complete_entry(e);
            }
        }
        let t = self.ts();
        t.req_snaps = snaps;
        t.lists
            .push(ListKind::Completions, vals.iter().copied(), false);
        t.tmp = vals;
    }

    /// `MPI_Waitsome` / `MPI_Testsome` completed `*outcount` entries listed in `indices`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_some(
        &mut self,
        s: &Snap,
        outcount: *mut c_int,
        indices: *mut c_int,
        sts: *mut MPI_Status,
        ret: c_int,
    ) {
        if outcount.is_null() {
            return;
        }
        // SAFETY: MPI wrote outcount.
        let k = unsafe { read_output(outcount) };
        self.set(Slot::Index, i64::from(k));
        if k == consts().undefined || k <= 0 || indices.is_null() {
            return;
        }
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        let mut vals = core::mem::take(&mut t.tmp);
        vals.clear();
        // SAFETY: MPI wrote `outcount` indices.
        t.lists.push(
            ListKind::Indices,
            (0..k as usize).map(|j| i64::from(unsafe { read_output(indices.add(j)) })),
            false,
        );
        for j in 0..k as usize {
            // SAFETY: as above.
            let i = unsafe { read_output(indices.add(j)) };
            if i < 0 || i as usize >= s.n {
                continue;
            }
            let Some(e) = snaps[i as usize] else { continue };
            let st = if sts.is_null() {
                sts
            } else {
                unsafe { sts.add(j) }
            };
            vals.extend(Self::completion_values(&e, st, ret));
            if !e.persistent {
                requests::complete_entry(&e);
            }
        }
        let t = self.ts();
        t.req_snaps = snaps;
        t.lists
            .push(ListKind::Completions, vals.iter().copied(), false);
        t.tmp = vals;
    }

    /// `MPI_Request_free`.
    pub fn request_freed(&mut self, s: &Snap, ret: c_int) {
        if let (Some(e), 0) = (s.req, ret) {
            requests::complete(s.handle, e.id);
        }
    }

    /// `MPI_Start`, `MPI_Cancel`: the request id is already in the `Request` slot.
    pub fn request_noted(&mut self, _s: &Snap) {}

    /// `MPI_Startall`: the ids are already in the `Requests` list.
    pub fn requests_noted(&mut self, _s: &Snap) {}

    // ------------------------------------------------------------ status substitution

    /// Scratch statuses when the caller ignores them.
    pub fn statuses_or_scratch(&mut self, sts: *mut MPI_Status, n: isize) -> *mut MPI_Status {
        if sts != consts().statuses_ignore && !sts.is_null() {
            return sts;
        }
        if n <= 0 {
            return sts;
        }
        let t = self.ts();
        // SAFETY: MPI_Status is plain data; zero is a valid value.
        t.statuses
            .resize(n as usize, unsafe { core::mem::zeroed() });
        t.statuses.as_mut_ptr()
    }

    // ------------------------------------------------------------ Fortran views

    /// Fortran status array buffer when the caller passes `MPI_STATUSES_IGNORE`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_statuses_or_scratch(
        &mut self,
        f: *mut core::ffi::c_void,
        n: c_int,
    ) -> *mut core::ffi::c_void {
        // SAFETY: reading an extern static pointer.
        let ignore = unsafe { MPI_F_STATUSES_IGNORE } as *mut core::ffi::c_void;
        if f != ignore || n <= 0 {
            return f;
        }
        let per = fortran_status_ints();
        let t = self.ts();
        t.fstatuses.resize(n as usize * per, 0);
        t.fstatuses.as_mut_ptr().cast()
    }

    /// C views of `n` Fortran statuses.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_statuses(&mut self, f: *const MPI_Fint, n: c_int) -> *mut MPI_Status {
        let n = n.max(0) as usize;
        let per = fortran_status_ints();
        let t = self.ts();
        // SAFETY: MPI_Status is plain data.
        t.c_statuses.resize(n, unsafe { core::mem::zeroed() });
        if f.is_null() {
            return t.c_statuses.as_mut_ptr();
        }
        for i in 0..n {
            // SAFETY: the Fortran array holds n statuses of `per` integers.
            unsafe { PMPI_Status_f2c(f.add(i * per), t.c_statuses.as_mut_ptr().add(i)) };
        }
        t.c_statuses.as_mut_ptr()
    }

    /// C handles of `n` Fortran requests.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_requests(&mut self, f: *const MPI_Fint, n: c_int) -> *mut MPI_Request {
        let n = n.max(0) as usize;
        let t = self.ts();
        t.c_requests.clear();
        for i in 0..n {
            // SAFETY: the Fortran array holds n requests.
            t.c_requests
                .push(unsafe { crate::consts::mpiscope_f2c_request(*f.add(i)) });
        }
        t.c_requests.as_mut_ptr()
    }

    /// C (0-based) views of Fortran (1-based) indices.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_indices(&mut self, f: *const MPI_Fint, n: c_int) -> *mut c_int {
        let n = n.max(0) as usize;
        let t = self.ts();
        t.c_indices.clear();
        for i in 0..n {
            // SAFETY: MPI wrote n indices.
            t.c_indices.push(unsafe { read_output(f.add(i)) } - 1);
        }
        t.c_indices.as_mut_ptr()
    }
}

/// Writes an encoder's block (if any) to the rank file.
fn flush_encoder(enc: &mut BlockEncoder) {
    if enc.is_empty() {
        return;
    }
    let (t, ns) = crate::clock::pair();
    let records = enc.records() as u64;
    crate::sink::write_block(enc.seal(t, ns), records);
    enc.clear();
}

#[cold]
fn push_slow(enc: &mut BlockEncoder, thread: u16, ev: &RawEvent) {
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

impl ThreadState {
    /// The end of a wrapper: the state is at rest again; a signal that waited for it is
    /// handled now.
    #[inline(always)]
    fn leave(&mut self) {
        self.phase.set(Phase::Idle);
        if self.deferred.load(Ordering::Relaxed) != 0 {
            crate::signals::run_deferred();
        }
    }

    #[inline]
    fn callsite(&mut self, ra: usize) -> u32 {
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

/// Source (world rank), tag and bytes of a status, when it can be read.
fn decode_status(
    st: *mut MPI_Status,
    ci: Option<&'static CommInfo>,
    ret: c_int,
) -> Option<(Option<i64>, i64, Option<i64>)> {
    let k = consts();
    if st.is_null() || st == k.status_ignore || ret != 0 {
        return None;
    }
    // SAFETY: MPI filled the status.
    let s = unsafe { &*st };
    let mut bytes: c_int = 0;
    // SAFETY: valid status and predefined datatype.
    let rc = unsafe { PMPI_Get_count(st, k.byte, &mut bytes) };
    let bytes = (rc == 0 && bytes != k.undefined).then_some(i64::from(bytes));
    let src = if s.MPI_SOURCE == k.proc_null {
        Some(PEER_NULL)
    } else {
        ci.map(|c| c.peer_world(s.MPI_SOURCE))
    };
    Some((src, i64::from(s.MPI_TAG), bytes))
}

/// Number of Fortran integers in a status.
pub fn fortran_status_ints() -> usize {
    (consts().status_size_bytes as usize / core::mem::size_of::<MPI_Fint>()).max(1)
}

/// Room for one Fortran status on the stack.
pub const FORTRAN_STATUS_MAX: usize = 16;

/// A status pointer, or `local` when the caller ignores the status.
#[inline(always)]
pub fn status_or(st: *mut MPI_Status, local: *mut MPI_Status) -> *mut MPI_Status {
    if st == consts().status_ignore || st.is_null() {
        local
    } else {
        st
    }
}

/// A Fortran status pointer, or `local` when the caller passes `MPI_STATUS_IGNORE`.
pub fn fortran_status_or(
    f: *mut core::ffi::c_void,
    local: *mut MPI_Fint,
) -> *mut core::ffi::c_void {
    // SAFETY: reading an extern static pointer.
    let ignore = unsafe { MPI_F_STATUS_IGNORE } as *mut core::ffi::c_void;
    if f == ignore || f.is_null() {
        local.cast()
    } else {
        f
    }
}

/// Converts a Fortran status.
pub unsafe fn fortran_status(f: *const MPI_Fint, c: *mut MPI_Status) {
    if !f.is_null() {
        PMPI_Status_f2c(f, c);
    }
}

/// Reads a Fortran INTEGER argument.
#[inline(always)]
pub fn fortran_int(p: *mut core::ffi::c_void) -> c_int {
    if p.is_null() {
        0
    } else {
        // SAFETY: Fortran passes a pointer to an INTEGER.
        unsafe { *(p as *const MPI_Fint) as c_int }
    }
}

/// A Fortran index output, converted from 1-based.
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn fortran_index(p: *const MPI_Fint) -> c_int {
    if p.is_null() {
        return consts().undefined;
    }
    // SAFETY: MPI wrote it.
    let v = unsafe { read_output(p) };
    if v == consts().undefined {
        v
    } else {
        v - 1
    }
}

/// True for `MPI_IN_PLACE` in either binding.
pub fn is_in_place(p: *const core::ffi::c_void) -> bool {
    core::ptr::eq(p, consts().in_place) || handles::is_fortran_in_place(p as usize)
}

/// A Fortran function of the real library, found on first use.
pub struct FortranTarget {
    names: &'static [&'static str],
    ptr: AtomicPtr<core::ffi::c_void>,
}

impl FortranTarget {
    /// A target looked up by any of `names` (NUL-terminated).
    pub const fn new(names: &'static [&'static str]) -> Self {
        FortranTarget {
            names,
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The function's address.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn get(&self) -> Option<*mut core::ffi::c_void> {
        let p = self.ptr.load(Ordering::Relaxed);
        if !p.is_null() {
            return Some(p);
        }
        for n in self.names {
            // SAFETY: NUL-terminated name; RTLD_NEXT finds the MPI library's definition.
            let p = unsafe { libc::dlsym(libc::RTLD_NEXT, n.as_ptr().cast()) };
            if !p.is_null() {
                self.ptr.store(p, Ordering::Relaxed);
                return Some(p);
            }
        }
        None
    }
}

/// The real Fortran function is missing: report once and fail the call.
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn fortran_missing(ierr: *mut MPI_Fint, name: &str) {
    session::warn_once(&format!(
        "cannot find {name} in the MPI library; the call was not made"
    ));
    if !ierr.is_null() {
        // SAFETY: Fortran passes a valid ierr.
        unsafe { *ierr = consts().err_other };
    }
}

/// Called by `MPI_Type_free`.
pub fn datatypes_changed() {
    handles::datatypes_changed();
}

/// Called by `MPI_Op_create` and `MPI_Op_free`.
pub fn ops_changed() {
    handles::ops_changed();
}

/// Called after `MPI_Pcontrol(level)`.
pub fn pcontrol(level: c_int) {
    session::pcontrol(level);
}

/// Called by `MPI_Abort` before the real call (which does not return).
pub fn on_abort(errorcode: c_int) {
    session::on_abort(errorcode);
}

/// Called after `MPI_Init` / `MPI_Init_thread`.
pub fn after_init() {
    session::start();
}

/// Called before `MPI_Finalize`.
pub fn before_finalize() {
    session::before_finalize();
}

/// Called after `MPI_Finalize`.
pub fn after_finalize() {
    session::after_finalize();
}

/// Sets the core-read mode.
pub fn set_core_mode(m: CoreMode) {
    CORE_MODE.store(
        match m {
            CoreMode::Off => 0,
            CoreMode::Sampled => 1,
            CoreMode::Every => 2,
        },
        Ordering::Relaxed,
    );
}

/// The C id of a call id (Fortran ids map to their C function).
pub fn c_id(call: u32) -> u32 {
    if call >= FORTRAN_BASE {
        call - FORTRAN_BASE
    } else {
        call
    }
}
