//! The program's `sigaction` and `signal` for the signals the recorder watches, and the
//! table of what the program wants for each of them.
//!
//! A program (or its libraries) that sets a handler after `MPI_Init` would otherwise replace
//! the recorder's, and a run that ends by that signal would lose its record. So, for a signal
//! whose handler is the recorder's ([`crate::signals`] installs it and marks it with
//! [`stand_in`]), these functions keep the recorder's handler installed and record the
//! program's action as the one to chain to; the program sees exactly what it would have seen
//! (`oldact` is its own previous action). Ignoring a signal really ignores it. Every other
//! call goes to the C library unchanged.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Signals numbered below this have a slot in the tables.
pub(crate) const NSIG: usize = 65;

/// The action the program (or the MPI library) set for each watched signal: what the signal
/// would do without us.
static mut PROGRAM: [core::mem::MaybeUninit<libc::sigaction>; NSIG] =
    [const { core::mem::MaybeUninit::zeroed() }; NSIG];
/// Signals whose handler is ours.
static OURS: [AtomicBool; NSIG] = [const { AtomicBool::new(false) }; NSIG];
/// The action the program set for `sig` (or the one before ours when it set none).
pub(crate) fn program_action(sig: c_int) -> &'static libc::sigaction {
    // SAFETY: slots are plain data written by `signals::install` and `sigaction`; signals
    // are in range.
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

/// Our handler now stands in for `sig` (installed by [`crate::signals`]).
pub(crate) fn stand_in(sig: c_int) {
    if sig > 0 && (sig as usize) < NSIG {
        OURS[sig as usize].store(true, Ordering::Release);
    }
}

type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

static REAL: AtomicUsize = AtomicUsize::new(0);

fn real() -> Option<SigactionFn> {
    let mut p = REAL.load(Ordering::Acquire);
    if p == 0 {
        // SAFETY: looking up the next definition of a libc symbol.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"sigaction".as_ptr()) } as usize;
        REAL.store(p, Ordering::Release);
    }
    // SAFETY: the C library's sigaction has this signature.
    (p != 0).then(|| unsafe { core::mem::transmute::<usize, SigactionFn>(p) })
}

/// Resolves the C library's `sigaction` (call before any signal handler may need it).
pub fn prepare() {
    let _ = real();
}

/// The C library's `sigaction`.
///
/// # Safety
/// As `sigaction(2)`.
pub unsafe fn real_sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    match real() {
        // SAFETY: the caller's contract.
        Some(f) => unsafe { f(sig, act, old) },
        None => {
            // SAFETY: errno is thread-local.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            -1
        }
    }
}

/// `sigaction(2)`, seen through the recorder.
///
/// # Safety
/// As `sigaction(2)`.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let Some(prog) = standing_in_for(sig) else {
        // SAFETY: the caller's contract.
        return unsafe { real_sigaction(sig, act, old) };
    };
    if !old.is_null() {
        // SAFETY: the caller passes writable storage.
        unsafe { *old = prog };
    }
    if !act.is_null() {
        // SAFETY: the caller passes a valid action.
        let a = unsafe { *act };
        if a.sa_sigaction == libc::SIG_IGN {
            // Ignoring is done by the kernel, not by a handler that does nothing (a blocked
            // system call must not even notice the signal).
            // SAFETY: as above.
            let r = unsafe { real_sigaction(sig, act, core::ptr::null_mut()) };
            if r != 0 {
                return r;
            }
            release(sig);
        }
        // SAFETY: a valid action for a watched signal.
        unsafe { set_program_action(sig, &a) };
    }
    0
}

/// `signal(3)` (BSD semantics, as the C library's), seen through the recorder.
///
/// # Safety
/// As `signal(3)`.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: plain structs for sigaction.
    unsafe {
        let mut act: libc::sigaction = core::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
        let mut old: libc::sigaction = core::mem::zeroed();
        if sigaction(sig, &act, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}
