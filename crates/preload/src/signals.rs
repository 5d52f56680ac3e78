//! Signals: the record survives every ending.
//!
//! * A signal whose default action ends the process (SIGTERM from a batch system at its time
//!   limit, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, SIGXCPU, SIGPIPE, SIGXFSZ, and the faults
//!   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): every thread writes its buffered events and
//!   the call it is inside (an open block), the rank writes its trailer, then the signal does
//!   what it would have done.
//! * A signal the program handles itself (codes that checkpoint on SIGTERM): the thread that
//!   received it writes its events, a note records the signal, the program's handler runs,
//!   and tracing goes on.
//! * Another thread's events are written by that thread: a collector asks it with a
//!   real-time signal queued with a private value ([`Request`]), and waits for its answer. A
//!   thread inside the recorder's own code ([`Phase::Busy`]) defers the work to the end of
//!   that code ([`run_deferred`]), so nothing ever touches a half-written encoder.
//!
//! The handlers allocate nothing and call only async-signal-safe functions. The program's
//! own `sigaction` and `signal` calls for these signals are interposed
//! ([`crate::interpose`]): its handler becomes the action this module chains to, and ours
//! stays installed.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::threads::{self, Phase};

/// A signal's default action ends the process; the faults among them are synchronous.
const WATCHED: [(c_int, &str); 15] = [
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    (libc::SIGPIPE, "SIGPIPE"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGABRT, "SIGABRT"),
];

/// Signals numbered below this have a slot in the tables.
const NSIG: usize = 65;

/// The name of a watched signal (`"SIG?"` otherwise).
pub fn name(sig: c_int) -> &'static str {
    WATCHED
        .iter()
        .find(|(s, _)| *s == sig)
        .map(|(_, n)| *n)
        .unwrap_or("SIG?")
}

/// Synchronous faults: the faulting instruction runs again when the handler returns.
fn is_fault(sig: c_int) -> bool {
    matches!(
        sig,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
    )
}

/// The action the program (or the MPI library) set for each watched signal: what the signal
/// would do without us.
static mut PROGRAM: [core::mem::MaybeUninit<libc::sigaction>; NSIG] =
    [const { core::mem::MaybeUninit::zeroed() }; NSIG];
/// Signals whose handler is ours.
static OURS: [AtomicBool; NSIG] = [const { AtomicBool::new(false) }; NSIG];
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The real-time signal that carries flush requests (0: none could be chosen).
static REQUEST_SIG: AtomicI32 = AtomicI32::new(0);
/// The latest request's number (answered requests are stored in each state).
static REQUEST: AtomicU64 = AtomicU64::new(0);
/// Whether the latest request wants the calls in progress too.
static REQUEST_OPEN: AtomicBool = AtomicBool::new(false);
/// A collection is running (one at a time).
static COLLECTING: AtomicBool = AtomicBool::new(false);
/// Notes written for signals the program handled (they stop at a bound).
static NOTES: AtomicU64 = AtomicU64::new(0);
const MAX_NOTES: u64 = 1000;
/// Threads asked by the running collection, by registry slot (one collection at a time).
static ASKED: [AtomicU64; threads::MAX_THREADS / 64] =
    [const { AtomicU64::new(0) }; threads::MAX_THREADS / 64];
/// A deferred request (not a signal number).
const DEFERRED_REQUEST: i32 = -1;
/// The value queued with a request: tells our requests from the program's own signals.
const MAGIC: usize = 0x6d70_6973_636f_7065;

/// `siginfo_t` as the kernel lays it out for a queued signal (`SI_QUEUE`).
#[repr(C)]
struct QueuedInfo {
    signo: c_int,
    errno: c_int,
    code: c_int,
    pad: c_int,
    pid: c_int,
    uid: u32,
    value: usize,
    rest: [u8; 128 - 32],
}

fn program_action(sig: c_int) -> &'static libc::sigaction {
    // SAFETY: slots are plain data written by `install` and `interpose`; signals are in range.
    unsafe { (*core::ptr::addr_of!(PROGRAM))[sig as usize].assume_init_ref() }
}

/// Sets what the program wants for `sig` (called by the interposed `sigaction`).
///
/// # Safety
/// `act` is a valid action.
pub(crate) unsafe fn set_program_action(sig: c_int, act: &libc::sigaction) {
    // SAFETY: a plain store into the table; the handler reads whole structs, and a race
    // with a signal being handled at that instant is inherent to changing an action.
    unsafe {
        (*core::ptr::addr_of_mut!(PROGRAM))[sig as usize] = core::mem::MaybeUninit::new(*act)
    };
}

/// What the program last set for `sig`, if our handler stands in for it.
pub(crate) fn standing_in_for(sig: c_int) -> Option<libc::sigaction> {
    if sig <= 0 || sig as usize >= NSIG || !OURS[sig as usize].load(Ordering::Acquire) {
        return None;
    }
    Some(*program_action(sig))
}

/// The program ignores `sig` now: our handler no longer stands in for it.
pub(crate) fn release(sig: c_int) {
    if sig > 0 && (sig as usize) < NSIG {
        OURS[sig as usize].store(false, Ordering::Release);
    }
}

fn our_action() -> libc::sigaction {
    // SAFETY: a zeroed sigaction is valid; fields set below.
    let mut act: libc::sigaction = unsafe { core::mem::zeroed() };
    act.sa_sigaction = handler as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
    // SAFETY: a valid set.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    act
}

/// Installs the handlers, remembering the previous actions (the MPI library's included),
/// and picks the request signal.
pub fn install() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    crate::interpose::prepare();
    let act = our_action();
    for (sig, _) in WATCHED {
        // SAFETY: plain sigaction calls with valid structs.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if crate::interpose::real_sigaction(sig, core::ptr::null(), &mut old) != 0 {
                continue;
            }
            // An ignored signal stays ignored; ours stands in for the rest.
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            set_program_action(sig, &old);
            if crate::interpose::real_sigaction(sig, &act, core::ptr::null_mut()) == 0 {
                OURS[sig as usize].store(true, Ordering::Release);
            }
        }
    }
    // The request signal: a real-time signal nobody handles, from the top of the range
    // (libraries take theirs from the bottom).
    let (lo, hi) = (libc::SIGRTMIN() + 4, libc::SIGRTMAX());
    for sig in (lo..=hi).rev() {
        // SAFETY: as above.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if crate::interpose::real_sigaction(sig, core::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
                && (sig as usize) < NSIG
            {
                set_program_action(sig, &old);
                if crate::interpose::real_sigaction(sig, &act, core::ptr::null_mut()) == 0 {
                    OURS[sig as usize].store(true, Ordering::Release);
                    REQUEST_SIG.store(sig, Ordering::Release);
                    break;
                }
            }
        }
    }
}

extern "C" fn handler(sig: c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: errno is thread-local; saved and restored around everything we do.
    let errno = unsafe { *libc::__errno_location() };
    if sig == REQUEST_SIG.load(Ordering::Relaxed) && is_request(info) {
        answer_request();
    } else {
        on_signal(sig, info, uctx);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
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
fn answer_request() {
    let Some(p) = threads::current_if_any() else {
        return;
    };
    // SAFETY: this thread's own state.
    let st = unsafe { &mut *p };
    match st.phase.get() {
        Phase::Busy => st.deferred.store(DEFERRED_REQUEST, Ordering::Release),
        Phase::Retired => {}
        Phase::Idle | Phase::InCall => answer(st),
    }
}

fn answer(st: &mut crate::rt::ThreadState) {
    let id = REQUEST.load(Ordering::Acquire);
    st.flush();
    if REQUEST_OPEN.load(Ordering::Acquire) {
        st.write_open();
    }
    st.answered.store(id, Ordering::Release);
}

/// Called by a wrapper, on its own thread, when it leaves the recorder's code and a signal
/// or request waited for it.
#[cold]
pub fn run_deferred() {
    let Some(p) = threads::current_if_any() else {
        return;
    };
    // SAFETY: this thread's own state.
    let st = unsafe { &mut *p };
    match st.deferred.swap(0, Ordering::AcqRel) {
        0 => {}
        DEFERRED_REQUEST => answer(st),
        sig => {
            // Delivered again, now that the state is at rest.
            // SAFETY: signals to this thread.
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), threads::gettid(), sig) };
        }
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
                answer(st);
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

/// A watched signal (not a request).
fn on_signal(sig: c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let me = threads::current_if_any();
    // SAFETY: this thread's own state.
    let busy = me.is_some_and(|p| unsafe { (*p).phase.get() } == Phase::Busy);
    let synchronous = is_fault(sig) || sig == libc::SIGABRT;
    if busy && !synchronous {
        // The recorder's own code is running on this thread: handle the signal when it ends
        // (a few microseconds).
        if let Some(p) = me {
            // SAFETY: as above.
            unsafe { (*p).deferred.store(sig, Ordering::Release) };
        }
        return;
    }
    let prog = *program_action(sig);
    let handled = prog.sa_sigaction != libc::SIG_DFL && prog.sa_sigaction != libc::SIG_IGN;
    if handled {
        if crate::session::is_tracing() && NOTES.fetch_add(1, Ordering::Relaxed) < MAX_NOTES {
            if let Some(p) = me {
                // SAFETY: as above; not Busy (checked), or a fault where we skip it.
                let st = unsafe { &mut *p };
                if !busy {
                    st.flush();
                }
                crate::session::note_signal(st.index, name(sig), "handled by the program");
            } else {
                crate::session::note_signal(0, name(sig), "handled by the program");
            }
        }
        // SAFETY: the program's own handler, called as the kernel would have.
        unsafe { call_program(sig, &prog, info, uctx) };
        return;
    }
    crate::session::end_by_signal(sig, busy, info);
    // Let the signal do what it would have done.
    // SAFETY: restoring the default action and delivering the signal again.
    unsafe {
        let mut dfl: libc::sigaction = core::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        crate::interpose::real_sigaction(sig, &dfl, core::ptr::null_mut());
        OURS[sig as usize].store(false, Ordering::Release);
        if !is_fault(sig) {
            let mut set: libc::sigset_t = core::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, core::ptr::null_mut());
            libc::syscall(libc::SYS_tgkill, libc::getpid(), threads::gettid(), sig);
        }
    }
}

/// Calls the program's handler with its mask and flags, as the kernel would have.
///
/// # Safety
/// `prog` is the program's action for `sig`, with a function handler.
unsafe fn call_program(
    sig: c_int,
    prog: &libc::sigaction,
    info: *mut libc::siginfo_t,
    uctx: *mut libc::c_void,
) {
    // SAFETY: sigset operations on local sets.
    unsafe {
        let mut mask = prog.sa_mask;
        if prog.sa_flags & libc::SA_NODEFER == 0 {
            libc::sigaddset(&mut mask, sig);
        }
        let mut old: libc::sigset_t = core::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut old);
        if prog.sa_flags & libc::SA_NODEFER != 0 {
            let mut one: libc::sigset_t = core::mem::zeroed();
            libc::sigemptyset(&mut one);
            libc::sigaddset(&mut one, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, core::ptr::null_mut());
        }
        if prog.sa_flags & libc::SA_RESETHAND != 0 {
            let mut dfl: libc::sigaction = core::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            set_program_action(sig, &dfl);
        }
        if prog.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                core::mem::transmute(prog.sa_sigaction);
            f(sig, info, uctx);
        } else {
            let f: extern "C" fn(c_int) = core::mem::transmute(prog.sa_sigaction);
            f(sig);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
    }
}

/// The sender of a signal, when the kernel says (`kill` or `tgkill` from another process).
pub(crate) fn sender(info: *const libc::siginfo_t) -> Option<i32> {
    if info.is_null() {
        return None;
    }
    // SAFETY: a kernel siginfo, read in the queued layout (pid at the same place for
    // SI_USER and SI_QUEUE).
    let q = unsafe { &*(info as *const QueuedInfo) };
    (q.code == libc::SI_USER || q.code == libc::SI_QUEUE).then_some(q.pid)
}
