//! The registry of thread states: each thread's [`ThreadState`], found in one compare for
//! the first thread that called MPI and through a thread-local for the others.
//!
//! Every thread that makes a recorded MPI call owns a state (see [`crate::state`] for who
//! may touch it and when). Another thread that wants a state flushed (the end of the
//! process, a hang) asks the owner with a signal ([`crate::collect`]) and waits for its
//! acknowledgement.
//!
//! States are never freed: a thread that exits flushes its state and retires it, and a later
//! thread takes it over. So a pointer read from the registry stays valid forever, which is
//! what lets a signal handler walk the registry without a lock.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

pub use crate::calls::MAX_THREADS;
use crate::state::{gettid, Phase, ThreadState};

static SLOTS: [AtomicPtr<ThreadState>; MAX_THREADS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_THREADS];
static USED: AtomicUsize = AtomicUsize::new(0);
static NEXT_INDEX: AtomicUsize = AtomicUsize::new(0);
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static MAIN_THREAD: AtomicUsize = AtomicUsize::new(0);
static MAIN_STATE: AtomicPtr<ThreadState> = AtomicPtr::new(core::ptr::null_mut());
static CLAIM_MAIN: Mutex<()> = Mutex::new(());
/// Block size for new thread states.
pub static BLOCK_SIZE: AtomicUsize = AtomicUsize::new(256 << 10);

struct TlsOwner(Cell<*mut ThreadState>);

impl Drop for TlsOwner {
    fn drop(&mut self) {
        let p = self.0.replace(core::ptr::null_mut());
        if p.is_null() {
            return;
        }
        // SAFETY: the state belongs to this exiting thread; no wrapper runs on it.
        let st = unsafe { &mut *p };
        st.phase.set(Phase::Busy);
        st.flush();
        crate::calls::absorb(st.counters);
        st.retire();
        st.phase.set(Phase::Retired);
        if let Ok(mut f) = FREE.lock() {
            f.push(p as usize);
        }
    }
}

thread_local! {
    static TLS: TlsOwner = const { TlsOwner(Cell::new(core::ptr::null_mut())) };
}

/// A state for a new thread: a retired one taken over, or a new one registered.
fn new_state() -> Option<*mut ThreadState> {
    let index = NEXT_INDEX
        .fetch_add(1, Ordering::Relaxed)
        .min(u16::MAX as usize) as u16;
    let reused = FREE.lock().ok().and_then(|mut f| f.pop());
    if let Some(p) = reused {
        let p = p as *mut ThreadState;
        // SAFETY: a retired state is owned by nobody until taken from the free list.
        unsafe { (*p).adopt(index, gettid()) };
        return Some(p);
    }
    let slot = USED.fetch_add(1, Ordering::AcqRel);
    if slot >= MAX_THREADS {
        crate::status::warn_once("more than 4096 threads call MPI; later threads are not recorded");
        return None;
    }
    let st = Box::into_raw(ThreadState::new(
        index,
        gettid(),
        BLOCK_SIZE.load(Ordering::Relaxed),
    ));
    SLOTS[slot].store(st, Ordering::Release);
    Some(st)
}

/// An identifier of the calling thread: `pthread_self()`, read directly from the thread
/// pointer on x86-64 glibc (the TCB's `self` field) to save a call per MPI call.
#[inline(always)]
fn thread_id() -> usize {
    #[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
    {
        let id: usize;
        // SAFETY: on x86-64 glibc, %fs:0x10 holds the thread's own descriptor address,
        // which is what pthread_self returns.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0x10]", out(reg) id, options(nostack, readonly, preserves_flags))
        };
        id
    }
    #[cfg(not(all(target_arch = "x86_64", target_env = "gnu")))]
    {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() as usize }
    }
}

/// This thread's state, created on first use (`None` while the thread is exiting, or when
/// too many threads record).
#[inline(always)]
pub fn current() -> Option<*mut ThreadState> {
    let me = thread_id();
    if me == MAIN_THREAD.load(Ordering::Relaxed) {
        return Some(MAIN_STATE.load(Ordering::Relaxed));
    }
    current_slow(me)
}

#[cold]
fn current_slow(me: usize) -> Option<*mut ThreadState> {
    if MAIN_THREAD.load(Ordering::Acquire) == 0 {
        let _claim = CLAIM_MAIN.lock();
        if MAIN_THREAD.load(Ordering::Acquire) == 0 {
            let st = new_state()?;
            // Publish the state before the thread id: only this thread can match the id.
            MAIN_STATE.store(st, Ordering::Release);
            MAIN_THREAD.store(me, Ordering::Release);
            return Some(st);
        }
    }
    TLS.try_with(|o| {
        let p = o.0.get();
        if !p.is_null() {
            return Some(p);
        }
        let st = new_state()?;
        o.0.set(st);
        Some(st)
    })
    .ok()
    .flatten()
}

/// This thread's state if it has one; never creates one (usable in a signal handler).
pub fn current_if_any() -> Option<*mut ThreadState> {
    let me = thread_id();
    if me == MAIN_THREAD.load(Ordering::Acquire) {
        return Some(MAIN_STATE.load(Ordering::Acquire));
    }
    TLS.try_with(|o| o.0.get()).ok().filter(|p| !p.is_null())
}

/// Every registered state that belongs to a thread (lock-free: usable in a signal handler).
pub fn for_each_state(mut f: impl FnMut(&mut ThreadState)) {
    for_each_slot(|_, st| f(st));
}

/// As [`for_each_state`], with each state's registry slot.
pub fn for_each_slot(mut f: impl FnMut(usize, &mut ThreadState)) {
    let n = USED.load(Ordering::Acquire).min(MAX_THREADS);
    for (i, slot) in SLOTS[..n].iter().enumerate() {
        let p = slot.load(Ordering::Acquire);
        if p.is_null() {
            continue;
        }
        // SAFETY: states are never freed once registered.
        let st = unsafe { &mut *p };
        if st.phase.get() != Phase::Retired {
            f(i, st);
        }
    }
}

/// True when this thread is between `enter` and `commit` of a recorded call.
pub fn inside_recorded_call() -> bool {
    // SAFETY: the state belongs to this thread.
    current().is_some_and(|p| unsafe { (*p).is_busy() })
}
