//! The call path: deciding whether a call is recorded, timing it, and writing its event.
//!
//! Generated wrappers do, in order: [`caller_address!`], [`enter`] (which returns `None`
//! when the call is not recorded, and the wrapper then calls the real function directly),
//! `pre_*` (snapshots of handles the call will change), [`CallGuard::start`] (or
//! [`CallGuard::start_open`], with the function that records the inputs of a call still in
//! progress), the real call, [`CallGuard::stop`], `post_*` (argument collection, see
//! [`crate::args`]) and [`CallGuard::commit`].
//!
//! This is the recorder's hot path: the state of the thread is found in one compare for the
//! first thread that called MPI (a thread-local for the others), the phase is published
//! with plain stores, and the event is encoded into the thread's block without allocation.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use mpiscope_trace::{ListKind, RawEvent, RawList, Slot, NO_CORE};

use crate::calls::{MODES, MODE_OFF, MODE_SAMPLED, SAMPLE_EVERY};
use crate::config::CoreMode;
use crate::state::{flush_encoder, push_slow, CallGuard, OpenCall, PeekFn, Phase};
use crate::threads::current;

/// How often the core is read.
pub static CORE_MODE: AtomicU8 = AtomicU8::new(1);
/// A block whose first event is older than this many ticks is written at the next event.
pub static FLUSH_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Recording window in ticks: events entering outside [start, end) are counted, not written.
pub static WINDOW_START: AtomicU64 = AtomicU64::new(0);
/// End of the recording window.
pub static WINDOW_END: AtomicU64 = AtomicU64::new(u64::MAX);

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
    crate::plugin::pre(call);
    Some(g)
}

impl CallGuard {
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
            crate::defs::define_call(call);
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
        t.burst_clock.at_entry(t_enter);
        t.open = OpenCall { guard, peek, pack };
        t.watch.call.store(call, Ordering::Relaxed);
        t.watch.t_enter.store(t_enter, Ordering::Relaxed);
        t.phase.set(Phase::InCall);
        if t.deferred.load(Ordering::Relaxed) != 0 {
            t.run_deferred();
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
        if let Some(v) = crate::plugin::post(call, (t_enter, t_exit)) {
            self.set(Slot::User, v);
        }
        let (callsite, core) = (self.callsite, self.core);
        let t = self.ts();
        // SAFETY: call < NCALLS.
        let c = unsafe { t.counters.get_unchecked_mut(call as usize) };
        if !in_window {
            c.skipped += 1;
            t.burst_clock.forget();
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
            cpu: t.burst_clock.burst,
        };
        if !t.enc.push(&ev) {
            push_slow(&mut t.enc, t.index, &ev);
        }
        // Here rather than in `stop`: after `MPI_Init` has started the session (and the
        // recorder's own work after the exit is a fraction of a microsecond).
        t.burst_clock.at_exit(t_exit);
        // A block older than the flush interval is written now: a rank killed later loses
        // at most that much of its record.
        if t_exit.wrapping_sub(t.enc.base_ticks()) > FLUSH_TICKS.load(Ordering::Relaxed) {
            flush_encoder(&mut t.enc);
        }
        t.leave();
    }
}
