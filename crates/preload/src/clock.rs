//! Clock reads: the x86 time-stamp counter when it is constant and non-stop, else
//! CLOCK_MONOTONIC. Ticks are converted to nanoseconds off-line from clock pairs.

use std::sync::atomic::{AtomicBool, Ordering};

static USE_TSC: AtomicBool = AtomicBool::new(false);

/// The clock source chosen at start-up.
pub fn source() -> &'static str {
    if USE_TSC.load(Ordering::Relaxed) {
        "tsc"
    } else {
        "monotonic"
    }
}

/// True when the time-stamp counter ticks at a constant rate on every core.
fn tsc_is_reliable() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return false;
        };
        let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        has("constant_tsc") && has("nonstop_tsc") && has("rdtscp")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Chooses the clock: `want` is `tsc`, `monotonic` or `auto`.
pub fn choose(want: &str) {
    let tsc = match want {
        "monotonic" => false,
        "tsc" => tsc_is_reliable(),
        _ => tsc_is_reliable(),
    };
    USE_TSC.store(tsc, Ordering::Relaxed);
}

/// CLOCK_MONOTONIC in ns.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in ns since the Unix epoch.
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One clock read.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Ordering::Relaxed) {
        // SAFETY: rdtsc has no preconditions on x86_64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// One clock read and the core it was taken on (`u32::MAX` when unknown).
#[inline(always)]
pub fn ticks_and_core() -> (u64, u32) {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Ordering::Relaxed) {
        let mut aux = 0u32;
        // SAFETY: rdtscp is available (checked in `tsc_is_reliable`).
        let t = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
        // Linux stores (node << 12) | cpu in TSC_AUX.
        return (t, aux & 0xfff);
    }
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    (monotonic_ns(), if c < 0 { u32::MAX } else { c as u32 })
}

/// A (ticks, CLOCK_MONOTONIC ns) pair read back to back.
pub fn pair() -> (u64, u64) {
    // Take the pair with the smallest gap out of a few tries.
    let mut best = (0, 0, u64::MAX);
    for _ in 0..3 {
        let a = ticks();
        let ns = monotonic_ns();
        let b = ticks();
        if b.wrapping_sub(a) < best.2 {
            best = (a / 2 + b / 2 + (a & b & 1), ns, b.wrapping_sub(a));
        }
    }
    (best.0, best.1)
}

/// Smallest non-zero difference between consecutive clock reads, in ticks.
pub fn resolution_ticks() -> u64 {
    let mut best = u64::MAX;
    for _ in 0..200 {
        let a = ticks();
        let mut b = ticks();
        while b == a {
            b = ticks();
        }
        best = best.min(b - a);
    }
    best
}
