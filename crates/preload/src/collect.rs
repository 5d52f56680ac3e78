//! Getting other threads' events written: a collector asks each thread with a real-time
//! signal queued with a private value ([`MAGIC`]) and waits for its answer.
//!
//! A thread that receives a request writes its buffered events and, when asked, the call it
//! is inside ([`crate::state::ThreadState::answer`]); a thread inside the recorder's own code
//! ([`Phase::Busy`]) defers the work to the end of that code, so nothing ever touches a
//! half-written encoder. Only threads inside MPI calls are asked while the program goes on
//! (MPI libraries expect interrupted system calls; the program's own threads may not);
//! every thread is asked when the process ends. Nothing here allocates: requests and
//! answers are atomics, and the wait is a sleep with a deadline.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::state::{Phase, DEFERRED_REQUEST, REQUEST, REQUEST_OPEN};
use crate::threads;

/// The real-time signal that carries flush requests (0: none could be chosen).
static REQUEST_SIG: AtomicI32 = AtomicI32::new(0);
/// A collection is running (one at a time).
static COLLECTING: AtomicBool = AtomicBool::new(false);
/// Threads asked by the running collection, by registry slot (one collection at a time).
static ASKED: [AtomicU64; threads::MAX_THREADS / 64] =
    [const { AtomicU64::new(0) }; threads::MAX_THREADS / 64];
/// The value queued with a request: tells our requests from the program's own signals.
const MAGIC: usize = 0x6d70_6973_636f_7065;

/// `siginfo_t` as the kernel lays it out for a queued signal (`SI_QUEUE`).
#[repr(C)]
pub(crate) struct QueuedInfo {
    pub signo: c_int,
    pub errno: c_int,
    pub code: c_int,
    pub pad: c_int,
    pub pid: c_int,
    pub uid: u32,
    pub value: usize,
    pub rest: [u8; 128 - 32],
}

/// The request signal is `sig` (chosen and handled by [`crate::signals`]).
pub(crate) fn set_request_signal(sig: c_int) {
    REQUEST_SIG.store(sig, Ordering::Release);
}

/// Is `sig`, delivered with `info`, a request of ours (not the program's own signal)?
pub(crate) fn is_request_signal(sig: c_int, info: *mut libc::siginfo_t) -> bool {
    sig == REQUEST_SIG.load(Ordering::Relaxed) && is_request(info)
}

fn is_request(info: *mut libc::siginfo_t) -> bool {
    if info.is_null() {
        return false;
    }
    // SAFETY: the kernel passes a full siginfo; read as the queued layout.
    let q = unsafe { &*(info as *const QueuedInfo) };
    // SAFETY: getpid has no preconditions.
    q.code == libc::SI_QUEUE && q.pid == unsafe { libc::getpid() } && q.value == MAGIC
}

/// This thread answers the latest request (or defers it while in the recorder's code).
pub(crate) fn answer_request() {
    let Some(p) = threads::current_if_any() else {
        return;
    };
    // SAFETY: this thread's own state.
    let st = unsafe { &mut *p };
    match st.phase.get() {
        Phase::Busy => st.deferred.store(DEFERRED_REQUEST, Ordering::Release),
        Phase::Retired => {}
        Phase::Idle | Phase::InCall => st.answer(),
    }
}

/// Which threads a collection asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every thread, with the call it is inside: the process ends.
    Final,
    /// Threads inside an MPI call, with that call: a hang is reported, the program goes on
    /// (threads outside MPI are not disturbed).
    InMpi,
}

fn now_ns() -> u64 {
    crate::clock::monotonic_ns()
}

/// Waits until every asked thread answered request `id`, or a deadline passed; returns the
/// events of the threads that did not answer.
fn wait_for_answers(id: u64) -> u64 {
    let deadline = now_ns() + 500_000_000;
    loop {
        let mut missing = 0u64;
        threads::for_each_slot(|slot, st| {
            let asked = ASKED[slot / 64].load(Ordering::Acquire) & (1 << (slot % 64)) != 0;
            if asked && st.answered.load(Ordering::Acquire) < id {
                missing += u64::from(st.enc.records()).max(1);
            }
        });
        if missing == 0 || now_ns() > deadline {
            return missing;
        }
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: a valid timespec; nanosleep is async-signal-safe.
        unsafe { libc::nanosleep(&ts, core::ptr::null_mut()) };
    }
}

fn send_request(tid: i32) -> bool {
    let sig = REQUEST_SIG.load(Ordering::Acquire);
    if sig == 0 {
        return false;
    }
    // SAFETY: getpid/getuid have no preconditions.
    let info = QueuedInfo {
        signo: sig,
        errno: 0,
        code: libc::SI_QUEUE,
        pad: 0,
        pid: unsafe { libc::getpid() },
        uid: unsafe { libc::getuid() },
        value: MAGIC,
        rest: [0; 96],
    };
    // SAFETY: a full siginfo for a thread of this process.
    unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            tid,
            sig,
            &info as *const QueuedInfo,
        ) == 0
    }
}

/// Gets the buffered events of every thread in `scope` written: this thread's directly, the
/// others' by asking them. Returns the events of threads that did not answer in time (they
/// count as lost when the process ends). `skip_self`: this thread's state may be
/// inconsistent (a fault inside the recorder's own code).
pub(crate) fn collect(scope: Scope, skip_self: bool) -> u64 {
    // One collection at a time; a second collector waits for the first (bounded).
    let start = now_ns();
    while COLLECTING.swap(true, Ordering::AcqRel) {
        if now_ns() - start > 2_000_000_000 {
            return 0;
        }
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: as above.
        unsafe { libc::nanosleep(&ts, core::ptr::null_mut()) };
    }
    REQUEST_OPEN.store(true, Ordering::Release);
    let id = REQUEST.fetch_add(1, Ordering::AcqRel) + 1;
    for w in &ASKED {
        w.store(0, Ordering::Relaxed);
    }
    let me = threads::current_if_any();
    threads::for_each_slot(|slot, st| {
        if me.is_some_and(|m| core::ptr::eq(m, st)) {
            if !skip_self && st.phase.get() != Phase::Busy {
                st.answer();
            }
            st.answered.store(id, Ordering::Release);
            return;
        }
        let wanted = match scope {
            Scope::Final => true,
            Scope::InMpi => st.phase.get() == Phase::InCall,
        };
        if wanted && send_request(st.tid) {
            ASKED[slot / 64].fetch_or(1 << (slot % 64), Ordering::AcqRel);
        }
    });
    let missing = wait_for_answers(id);
    COLLECTING.store(false, Ordering::Release);
    missing
}
