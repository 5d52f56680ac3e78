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
//!   real-time signal ([`crate::collect`]), which this module's handler receives and
//!   answers, and waits for its answer. A thread inside the recorder's own code
//!   ([`Phase::Busy`]) defers the work to the end of that code, so nothing ever touches a
//!   half-written encoder.
//!
//! The handlers allocate nothing and call only async-signal-safe functions. The program's
//! own `sigaction` and `signal` calls for these signals are interposed
//! ([`crate::interpose`]): its handler becomes the action this module chains to, and ours
//! stays installed.

use std::fmt::Write as _;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::collect::{self, QueuedInfo};
use crate::ending::{self, Ending};
use crate::fixed::FixedBuf;
use crate::interpose::{self, program_action, set_program_action, NSIG};
use crate::state::{gettid, Phase};
use crate::threads;

static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Notes written for signals the program handled (they stop at a bound).
static NOTES: AtomicU64 = AtomicU64::new(0);
const MAX_NOTES: u64 = 1000;

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
    interpose::prepare();
    let act = our_action();
    for (sig, _) in WATCHED {
        // SAFETY: plain sigaction calls with valid structs.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if interpose::real_sigaction(sig, core::ptr::null(), &mut old) != 0 {
                continue;
            }
            // An ignored signal stays ignored; ours stands in for the rest.
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            set_program_action(sig, &old);
            if interpose::real_sigaction(sig, &act, core::ptr::null_mut()) == 0 {
                interpose::stand_in(sig);
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
            if interpose::real_sigaction(sig, core::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
                && (sig as usize) < NSIG
            {
                set_program_action(sig, &old);
                if interpose::real_sigaction(sig, &act, core::ptr::null_mut()) == 0 {
                    interpose::stand_in(sig);
                    collect::set_request_signal(sig);
                    break;
                }
            }
        }
    }
}

extern "C" fn handler(sig: c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: errno is thread-local; saved and restored around everything we do.
    let errno = unsafe { *libc::__errno_location() };
    if collect::is_request_signal(sig, info) {
        collect::answer_request();
    } else {
        on_signal(sig, info, uctx);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
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
        if crate::status::is_tracing() && NOTES.fetch_add(1, Ordering::Relaxed) < MAX_NOTES {
            if let Some(p) = me {
                // SAFETY: as above; not Busy (checked), or a fault where we skip it.
                let st = unsafe { &mut *p };
                if !busy {
                    st.flush();
                }
                ending::note_signal(st.index, name(sig), "handled by the program");
            } else {
                ending::note_signal(0, name(sig), "handled by the program");
            }
        }
        // SAFETY: the program's own handler, called as the kernel would have.
        unsafe { call_program(sig, &prog, info, uctx) };
        return;
    }
    end_by_signal(sig, busy, info);
    // Let the signal do what it would have done.
    // SAFETY: restoring the default action and delivering the signal again.
    unsafe {
        let mut dfl: libc::sigaction = core::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        interpose::real_sigaction(sig, &dfl, core::ptr::null_mut());
        interpose::release(sig);
        if !is_fault(sig) {
            let mut set: libc::sigset_t = core::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, core::ptr::null_mut());
            libc::syscall(libc::SYS_tgkill, libc::getpid(), gettid(), sig);
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

/// A signal whose default action ends the process: the end of the record.
fn end_by_signal(sig: c_int, skip_self: bool, info: *const libc::siginfo_t) {
    let mut buf = [0u8; 96];
    let from = sender(info);
    let reason = signal_reason(&mut buf, sig, from);
    ending::end(reason, Ending::Final { skip_self });
}

/// Reason text for a signal ending: `signal SIGTERM (sent by process 1234)`.
fn signal_reason(buf: &mut [u8], sig: c_int, from: Option<i32>) -> &str {
    let mut w = FixedBuf { buf, len: 0 };
    let _ = write!(w, "signal {}", name(sig));
    if let Some(pid) = from {
        let _ = write!(w, " (sent by process {pid})");
    }
    let n = w.len;
    std::str::from_utf8(&w.buf[..n]).unwrap_or("signal")
}

/// The sender of a signal, when the kernel says (`kill` or `tgkill` from another process).
fn sender(info: *const libc::siginfo_t) -> Option<i32> {
    if info.is_null() {
        return None;
    }
    // SAFETY: a kernel siginfo, read in the queued layout (pid at the same place for
    // SI_USER and SI_QUEUE).
    let q = unsafe { &*(info as *const QueuedInfo) };
    (q.code == libc::SI_USER || q.code == libc::SI_QUEUE).then_some(q.pid)
}
