//! The thread's CPU time over compute bursts, beside their wall time.
//!
//! When ranks share cores, a burst's wall time (the gap between two MPI calls) includes the
//! time the thread waited for a core; its CPU time does not. But a burst may also have
//! blocked (a `sleep`, reading a file from disk, waiting for a lock): that time is not CPU
//! time either, yet the program needs it on any machine. The two are told apart by the
//! thread's voluntary context switches: a burst during which the thread gave up its core
//! (it blocked) gets no CPU time, and is replayed for its wall time as before; one that was
//! only preempted (involuntary switches) gets its CPU time. The CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`) and the switch count (`getrusage(RUSAGE_THREAD)`) are system
//! calls (about 300 ns each here, not in the vDSO), so the recorder reads them only:
//!
//! * at a call's entry when the burst before it lasted at least [`MIN_BURST_TICKS`] (a long
//!   burst, or one the scheduler stretched: a preempted burst is long);
//! * at a call's exit when the last reading is at least that old.
//!
//! Each read is thus paid for by at least that much wall time (1% or less at 50 us), and a
//! tight polling loop reads once per interval. A long burst's CPU time is measured from the
//! last reading, which is the previous call's exit or at most one interval before it (the
//! event carries that lead: [`mpiscope_trace::BurstCpu`]). A voluntary switch in that
//! lead (a short call before the burst that yielded its core) also withholds the CPU time:
//! the burst keeps its wall time, which is never less than what the program needs.

use std::sync::atomic::{AtomicU64, Ordering};

use mpiscope_trace::BurstCpu;

/// Bursts at least this many clock ticks long get their CPU time (`u64::MAX`: off).
pub static MIN_BURST_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The calling thread's CPU time in ns and its voluntary context switches so far: two
/// system calls, since `getrusage`'s CPU time lags by up to a scheduler tick (it leaves out
/// the running slice), too coarse for bursts of a millisecond.
fn thread_usage() -> (u64, u64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; the clock id is valid on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    let cpu = (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64);
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage; RUSAGE_THREAD is valid on Linux.
    let switches = if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } == 0 {
        u.ru_nvcsw as u64
    } else {
        u64::MAX
    };
    (cpu, switches)
}

/// One thread's readings.
#[derive(Debug, Default, Clone, Copy)]
pub struct BurstClock {
    /// CPU ns at the last reading.
    ref_ns: u64,
    /// Voluntary context switches at the last reading.
    ref_switches: u64,
    /// Clock ticks of the last reading (0: none since the last event not written).
    ref_ticks: u64,
    /// Exit ticks of the thread's last timed call (0: none).
    prev_exit: u64,
    /// The CPU time of the burst before the call in progress, when read at its entry.
    pub burst: Option<BurstCpu>,
}

impl BurstClock {
    /// At a call's entry (`t_enter` read): reads the CPU clock if the burst was long.
    #[inline(always)]
    pub fn at_entry(&mut self, t_enter: u64) {
        self.burst = None;
        let min = MIN_BURST_TICKS.load(Ordering::Relaxed);
        if min != u64::MAX && t_enter.wrapping_sub(self.prev_exit) >= min {
            self.read_at_entry(t_enter);
        }
    }

    #[inline(never)]
    fn read_at_entry(&mut self, t_enter: u64) {
        let (now, switches) = thread_usage();
        // A thread that blocked since the last reading keeps its burst's wall time.
        let ran = switches == self.ref_switches;
        if ran && self.ref_ticks != 0 && self.prev_exit != 0 && self.ref_ticks <= self.prev_exit {
            self.burst = Some(BurstCpu {
                ns: now.saturating_sub(self.ref_ns),
                lead_ticks: self.prev_exit - self.ref_ticks,
            });
        }
        self.ref_ns = now;
        self.ref_switches = switches;
        self.ref_ticks = t_enter;
    }

    /// At a call's exit (`t_exit` read): reads the CPU clock if the last reading is old.
    #[inline(always)]
    pub fn at_exit(&mut self, t_exit: u64) {
        let min = MIN_BURST_TICKS.load(Ordering::Relaxed);
        if min == u64::MAX {
            return;
        }
        self.prev_exit = t_exit;
        if t_exit.wrapping_sub(self.ref_ticks) >= min {
            self.read_at_exit(t_exit);
        }
    }

    #[inline(never)]
    fn read_at_exit(&mut self, t_exit: u64) {
        (self.ref_ns, self.ref_switches) = thread_usage();
        self.ref_ticks = t_exit;
    }

    /// The call was not written (outside the recording window): the next written event's
    /// burst starts before this call, where there is no reading, so it gets no CPU time.
    pub fn forget(&mut self) {
        self.ref_ticks = 0;
        self.burst = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_burst_gets_its_cpu_time_and_a_short_one_none() {
        MIN_BURST_TICKS.store(1000, Ordering::Relaxed);
        // Fault the code in first: a fault that reads a page from disk blocks, and a burst
        // that blocked has no CPU time. Spins until the thread has run `ms` on a core (not
        // of the wall clock: on a busy machine the thread waits for a core meanwhile).
        let spin = |ms: u64| {
            let t0 = thread_usage().0;
            let mut x = 0u64;
            while thread_usage().0.saturating_sub(t0) < ms * 1_000_000 {
                for _ in 0..1000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
        };
        spin(1);
        let _ = thread_usage();
        let mut c = BurstClock::default();
        c.at_entry(10_000);
        c.at_exit(10_100);
        // A short burst: no reading, no CPU time.
        c.at_entry(10_200);
        assert_eq!(c.burst, None);
        c.at_exit(10_300);
        // Work on the CPU: 20 ms of spinning.
        spin(20);
        c.at_entry(50_000);
        let b = c.burst.expect("a long burst has a CPU time");
        // The last reading, at the first entry (10_000), is 300 ticks before the burst's
        // start at 10_300.
        assert_eq!(b.lead_ticks, 300);
        assert!(b.ns >= 20_000_000 && b.ns < 2_000_000_000, "{b:?}");
        // A burst that sleeps blocked: it keeps its wall time (no CPU time), the program
        // needs it whatever the cores do.
        c.at_exit(50_100);
        std::thread::sleep(std::time::Duration::from_millis(30));
        c.at_entry(90_000);
        assert_eq!(c.burst, None);
        // The next one, spinning again, gets its CPU time.
        c.at_exit(90_100);
        spin(5);
        c.at_entry(130_000);
        let b = c.burst.expect("a burst that ran has a CPU time");
        assert!(b.ns >= 5_000_000 && b.ns < 1_000_000_000, "{b:?}");
        c.forget();
        c.at_entry(200_000);
        assert_eq!(c.burst, None);
        MIN_BURST_TICKS.store(u64::MAX, Ordering::Relaxed);
    }
}
