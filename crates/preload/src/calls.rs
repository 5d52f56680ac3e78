//! Call ids, whether each is recorded, and how often each was called.
//!
//! A call id is the index of a C function in the generated table ([`CALL_NAMES`]), or that
//! plus [`FORTRAN_BASE`] for its Fortran binding. The generated wrappers hold the tables
//! (they are written together from `mpi.h`); this module is the one place that reads them.
//!
//! Every thread counts its calls in a table of its own ([`Counter`] per call id), written
//! by that thread only with plain stores. The tables are registered here and never freed,
//! so the trailer can add them up from a signal handler without a lock; a thread that exits
//! leaves its counts in [`absorb`]'s total and its zeroed table to the next thread.

use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

pub use crate::wrappers::{CALL_NAMES, FLAVOUR, FORTRAN_BASE};

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

/// Most threads of a rank that record (later ones are not recorded): the capacity of the
/// counter tables here and of the thread registry ([`crate::threads`]).
pub const MAX_THREADS: usize = 4096;

/// The C id of a call id (Fortran ids map to their C function).
pub fn c_id(call: u32) -> u32 {
    if call >= FORTRAN_BASE {
        call - FORTRAN_BASE
    } else {
        call
    }
}

/// The C name of a call id (`"?"` for an id out of range).
pub fn name(call: u32) -> &'static str {
    CALL_NAMES.get(c_id(call) as usize).copied().unwrap_or("?")
}

/// No call is recorded from now on (counters stop too).
pub fn stop_recording() {
    for m in MODES.iter() {
        m.store(MODE_OFF, Ordering::Relaxed);
    }
}

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

impl Counter {
    /// A counter at zero (usable in a `static`).
    pub const ZERO: Counter = Counter {
        count: 0,
        recorded: 0,
        ticks: 0,
        skipped: 0,
        phase: 0,
    };
}

static TABLES: [AtomicPtr<Counter>; MAX_THREADS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_THREADS];
static TABLES_USED: AtomicUsize = AtomicUsize::new(0);
/// Counts of threads that exited.
static EXITED: Mutex<Vec<Counter>> = Mutex::new(Vec::new());

/// A new table of counters, one per call id, registered for [`add_totals`] and never freed.
pub(crate) fn new_table() -> &'static mut [Counter] {
    let table: &'static mut [Counter] =
        Box::leak(vec![Counter::default(); NCALLS].into_boxed_slice());
    let slot = TABLES_USED.fetch_add(1, Ordering::AcqRel);
    // The thread registry creates at most MAX_THREADS states, hence tables.
    if let Some(t) = TABLES.get(slot) {
        t.store(table.as_mut_ptr(), Ordering::Release);
    }
    table
}

/// Keeps the counts of an exiting thread (its table is then zeroed for the next one).
pub(crate) fn absorb(c: &[Counter]) {
    let mut e = EXITED.lock().unwrap_or_else(|p| p.into_inner());
    if e.is_empty() {
        e.resize(c.len(), Counter::default());
    }
    for (a, b) in e.iter_mut().zip(c) {
        a.count += b.count;
        a.recorded += b.recorded;
        a.ticks += b.ticks;
    }
}

/// Adds every thread's counts, and those of exited threads, to `totals` (lock-free but for
/// a `try_lock`: usable in a signal handler).
pub(crate) fn add_totals(totals: &mut [Counter]) {
    let mut add = |c: &[Counter]| {
        for (a, b) in totals.iter_mut().zip(c) {
            a.count += b.count;
            a.recorded += b.recorded;
            a.ticks += b.ticks;
        }
    };
    let n = TABLES_USED.load(Ordering::Acquire).min(MAX_THREADS);
    for t in &TABLES[..n] {
        let p = t.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: tables are never freed and hold NCALLS counters.
            add(unsafe { core::slice::from_raw_parts(p, NCALLS) });
        }
    }
    if let Ok(e) = EXITED.try_lock() {
        add(&e);
    }
}
