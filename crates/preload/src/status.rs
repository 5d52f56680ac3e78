//! Where the recorder is in the life of the process (loaded, recording into buffers,
//! writing the rank file, stopped), this process's world rank and epoch, and the one line
//! on stderr that reports a problem.
//!
//! Everything here is a plain atomic: read by wrappers, signal handlers and the keeper
//! thread alike, without a lock.

use std::fmt::Write as _;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};

use crate::fixed::FixedBuf;

/// The recorder's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Loaded, not configured.
    Loaded = 0,
    /// Recording into buffers; the rank file does not exist yet.
    PreInit = 1,
    /// Recording to the rank file.
    Tracing = 2,
    /// Finished (finalized, exited, or failed).
    Stopped = 3,
}

static STATE: AtomicU8 = AtomicU8::new(State::Loaded as u8);
static RANK: AtomicI32 = AtomicI32::new(-1);
/// The run's epoch on this rank's monotonic clock (ns).
static EPOCH_NS: AtomicU64 = AtomicU64::new(0);
static WARNED: AtomicBool = AtomicBool::new(false);

/// The recorder's state now.
pub fn state() -> State {
    match STATE.load(Ordering::Acquire) {
        0 => State::Loaded,
        1 => State::PreInit,
        2 => State::Tracing,
        _ => State::Stopped,
    }
}

/// Moves to state `s`.
pub(crate) fn set_state(s: State) {
    STATE.store(s as u8, Ordering::Release);
}

/// Is the rank file being written?
pub fn is_tracing() -> bool {
    state() == State::Tracing
}

/// World rank (-1 before `MPI_Init`).
pub fn world_rank() -> c_int {
    RANK.load(Ordering::Relaxed)
}

/// Sets the world rank (once MPI is initialized).
pub(crate) fn set_world_rank(rank: c_int) {
    RANK.store(rank, Ordering::Relaxed);
}

/// The run's epoch on this rank's monotonic clock, in ns.
pub(crate) fn epoch_ns() -> u64 {
    EPOCH_NS.load(Ordering::Relaxed)
}

/// Sets the run's epoch (agreed by all ranks at start).
pub(crate) fn set_epoch_ns(ns: u64) {
    EPOCH_NS.store(ns, Ordering::Relaxed);
}

/// Prints one line on stderr, prefixed with the rank, in one write (lines of ranks sharing
/// the launcher's stderr must not interleave). No allocation.
pub fn warn_args(args: std::fmt::Arguments<'_>) {
    let mut buf = [0u8; 1024];
    let mut w = FixedBuf {
        buf: &mut buf,
        len: 0,
    };
    let r = world_rank();
    let _ = if r >= 0 {
        write!(w, "mpiscope: rank {r}: ")
    } else {
        write!(w, "mpiscope: ")
    };
    let _ = w.write_fmt(args);
    if w.len == w.buf.len() {
        w.len -= 1;
    }
    let _ = w.write_str("\n");
    // SAFETY: valid buffer; a failed write to stderr is not worth reporting.
    unsafe { libc::write(2, w.buf.as_ptr().cast(), w.len) };
}

/// Prints one line on stderr, prefixed with the rank (no allocation).
pub fn warn(msg: &str) {
    warn_args(format_args!("{msg}"));
}

/// Prints a warning once per process.
pub fn warn_once(msg: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        warn(msg);
    }
}

/// Stops recording after a failure of the recorder itself; the program goes on.
pub fn fail(msg: &str) {
    crate::calls::stop_recording();
    let was = STATE.swap(State::Stopped as u8, Ordering::AcqRel);
    if was != State::Stopped as u8 {
        warn(&format!("{msg}; tracing disabled, the program continues"));
    }
}
