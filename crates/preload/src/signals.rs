//! Fatal signals: write what was recorded, then let the signal do what it would have done.

use std::sync::atomic::{AtomicBool, Ordering};

const SIGNALS: [(libc::c_int, &str); 10] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGXCPU, "SIGXCPU"),
];

static mut PREVIOUS: [core::mem::MaybeUninit<libc::sigaction>; 10] =
    [const { core::mem::MaybeUninit::zeroed() }; 10];
static INSTALLED: AtomicBool = AtomicBool::new(false);
static HANDLING: AtomicBool = AtomicBool::new(false);

extern "C" fn handler(sig: libc::c_int) {
    let Some(i) = SIGNALS.iter().position(|(s, _)| *s == sig) else {
        return;
    };
    if !HANDLING.swap(true, Ordering::AcqRel) {
        crate::session::on_signal(SIGNALS[i].1);
    }
    // Put the previous disposition back and deliver the signal to it: a fault re-executes
    // the faulting instruction, an asynchronous signal is raised again once we return.
    // SAFETY: restoring the action saved by `install`.
    unsafe {
        let prev = (*core::ptr::addr_of!(PREVIOUS))[i].assume_init_ref();
        libc::sigaction(sig, prev, core::ptr::null_mut());
        if !matches!(
            sig,
            libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
        ) {
            libc::raise(sig);
        }
    }
}

/// Installs the handlers, remembering the previous ones (the MPI library's included).
pub fn install() {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    for (i, (sig, _)) in SIGNALS.iter().enumerate() {
        // SAFETY: plain sigaction calls with valid structs.
        unsafe {
            let mut act: libc::sigaction = core::mem::zeroed();
            act.sa_sigaction = handler as *const () as usize;
            act.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(*sig, &act, &mut old) == 0 {
                // Keep an ignored signal ignored.
                if old.sa_sigaction == libc::SIG_IGN {
                    libc::sigaction(*sig, &old, core::ptr::null_mut());
                }
                (*core::ptr::addr_of_mut!(PREVIOUS))[i] = core::mem::MaybeUninit::new(old);
            }
        }
    }
}
