//! MPITEST's measurement method, independent of MPI so it can be checked on a fake clock.
//!
//! * `DT`, the cost of one timer read: `t1 = now; t2 = now; DT = t2 - t1`.
//! * `DB`, the cost of a barrier: `barrier; t1 = now; barrier; t2 = now; DB = t2 - t1 - DT`.
//! * One sample of an operation: `barrier; t1 = now; operation; barrier; t2 = now`, and
//!   `t = t2 - t1 - DT - DB`.
//!
//! MPITEST measures DT and DB once; we take the median of many measurements (a single one
//! is at the mercy of one interruption). The correction is biased: the trailing barrier of
//! a sample starts while the slowest rank is still in the operation, so it costs less than a
//! free-standing barrier and `t` slightly underestimates; both raw and corrected values are
//! reported.
//! * Beyond MPITEST (`--in-call`), the operation alone: `t_in = t3 - t1 - DT`, `t3` read
//!   right after the operation, before the trailing barrier: what a simulator reports as
//!   the time inside the call, without the barrier's correction. The extra read is then
//!   also taken out of `t` (`t = t2 - t1 - 2 DT - DB`).

use crate::stats::Summary;

/// What the method needs from the machine: a clock and a barrier.
pub trait Harness {
    /// The current time in seconds (`MPI_Wtime`).
    fn now(&mut self) -> f64;
    /// Synchronizes all ranks (`MPI_Barrier`).
    fn barrier(&mut self);
}

/// The corrections subtracted from every sample.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Overheads {
    /// Cost of one timer read (median), seconds.
    pub dt: f64,
    /// Cost of one barrier (median), seconds.
    pub db: f64,
    /// The smallest non-zero difference between two successive timer reads: the timer's
    /// real resolution, seconds (0 if every pair read the same value).
    pub resolution: f64,
}

/// `iters` measurements of DT (the TIMING operation).
pub fn timer_samples<H: Harness>(h: &mut H, iters: u32) -> Vec<f64> {
    (0..iters)
        .map(|_| {
            let t1 = h.now();
            let t2 = h.now();
            t2 - t1
        })
        .collect()
}

/// `iters` measurements of DB (the BARRIER operation), given DT.
pub fn barrier_samples<H: Harness>(h: &mut H, iters: u32, dt: f64) -> Vec<f64> {
    (0..iters)
        .map(|_| {
            h.barrier();
            let t1 = h.now();
            h.barrier();
            let t2 = h.now();
            t2 - t1 - dt
        })
        .collect()
}

/// Measures DT and DB (`iters` times each) and the timer's resolution.
pub fn overheads<H: Harness>(h: &mut H, iters: u32) -> Overheads {
    let dts = timer_samples(h, iters);
    let dt = Summary::of(&dts).median;
    let db = Summary::of(&barrier_samples(h, iters, dt)).median;
    let resolution = dts
        .iter()
        .copied()
        .filter(|&d| d > 0.0)
        .fold(f64::INFINITY, f64::min);
    Overheads {
        dt,
        db,
        resolution: if resolution.is_finite() {
            resolution
        } else {
            0.0
        },
    }
}

/// Raw (`t2 - t1`) and corrected (`t2 - t1 - DT - DB`) samples of one operation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// `t2 - t1`, seconds.
    pub raw: Vec<f64>,
    /// `t2 - t1 - DT - DB`, seconds.
    pub corrected: Vec<f64>,
    /// `t3 - t1 - DT`, the operation alone (empty unless asked for), seconds.
    pub in_call: Vec<f64>,
}

/// Runs `op` `warmup` times untimed, then `iters` timed samples by MPITEST's scheme, each
/// timing `reps` back-to-back runs of `op` (1 in MPITEST) and divided by `reps`; with
/// `in_call` the operation alone too (`t3 - t1 - DT`, `t3` read before the trailing barrier;
/// the corrected time then takes out both reads).
pub fn measure<H: Harness>(
    h: &mut H,
    o: &Overheads,
    warmup: u32,
    iters: u32,
    reps: u32,
    in_call: bool,
    mut op: impl FnMut(&mut H),
) -> Samples {
    let reps = reps.max(1);
    for _ in 0..warmup {
        h.barrier();
        op(h);
    }
    let mut s = Samples {
        raw: Vec::with_capacity(iters as usize),
        corrected: Vec::with_capacity(iters as usize),
        in_call: Vec::with_capacity(if in_call { iters as usize } else { 0 }),
    };
    let r = f64::from(reps);
    for _ in 0..iters {
        h.barrier();
        let t1 = h.now();
        for _ in 0..reps {
            op(h);
        }
        let extra = if in_call {
            let t3 = h.now();
            s.in_call.push((t3 - t1 - o.dt) / r);
            o.dt
        } else {
            0.0
        };
        h.barrier();
        let t2 = h.now();
        s.raw.push((t2 - t1) / r);
        s.corrected.push((t2 - t1 - o.dt - extra - o.db) / r);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that advances by fixed costs: a timer read returns the time, then costs
    /// `read`; a barrier costs `bar`; the operation costs `op`.
    struct Fake {
        t: f64,
        read: f64,
        bar: f64,
        reads: u32,
        barriers: u32,
    }

    impl Harness for Fake {
        fn now(&mut self) -> f64 {
            let t = self.t;
            self.t += self.read;
            self.reads += 1;
            t
        }
        fn barrier(&mut self) {
            self.t += self.bar;
            self.barriers += 1;
        }
    }

    fn fake() -> Fake {
        Fake {
            t: 1000.0,
            read: 2e-8,
            bar: 3e-6,
            reads: 0,
            barriers: 0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn dt_and_db_are_the_costs_of_a_read_and_a_barrier() {
        let mut f = fake();
        let o = overheads(&mut f, 50);
        assert!(close(o.dt, 2e-8), "DT {}", o.dt);
        assert!(close(o.db, 3e-6), "DB {}", o.db);
        assert!(close(o.resolution, 2e-8));
        // 50 DT pairs and 50 DB pairs of reads; two barriers per DB sample.
        assert_eq!((f.reads, f.barriers), (200, 100));
    }

    #[test]
    fn corrected_samples_are_the_operation_alone() {
        let mut f = fake();
        let o = overheads(&mut f, 10);
        let (reads, barriers) = (f.reads, f.barriers);
        let s = measure(&mut f, &o, 3, 20, 1, false, |h| h.t += 7e-5);
        assert_eq!(s.corrected.len(), 20);
        for (raw, c) in s.raw.iter().zip(&s.corrected) {
            assert!(close(*c, 7e-5), "corrected {c}");
            assert!(close(*raw, 7e-5 + 2e-8 + 3e-6), "raw {raw}");
        }
        // Warm-up: one barrier each, no reads; samples: two barriers and two reads each.
        assert_eq!(f.barriers - barriers, 3 + 40);
        assert_eq!(f.reads - reads, 40);
    }

    /// `--in-call`: the operation alone, and the corrected time as without it.
    #[test]
    fn the_operation_alone_before_the_trailing_barrier() {
        let mut f = fake();
        let o = overheads(&mut f, 10);
        let s = measure(&mut f, &o, 1, 8, 2, true, |h| h.t += 7e-5);
        assert_eq!(s.in_call.len(), 8);
        for ((c, i), raw) in s.corrected.iter().zip(&s.in_call).zip(&s.raw) {
            assert!(close(*i, 7e-5), "in call {i}");
            assert!(close(*c, 7e-5), "corrected {c}");
            assert!(close(*raw, 7e-5 + (2.0 * 2e-8 + 3e-6) / 2.0), "raw {raw}");
        }
        assert!(measure(&mut f, &o, 0, 3, 1, false, |h| h.t += 1e-6)
            .in_call
            .is_empty());
    }

    #[test]
    fn repetitions_share_one_correction() {
        let mut f = fake();
        let o = overheads(&mut f, 10);
        let s = measure(&mut f, &o, 0, 5, 10, false, |h| h.t += 1e-6);
        for (raw, c) in s.raw.iter().zip(&s.corrected) {
            assert!(close(*c, 1e-6), "corrected {c}");
            assert!(close(*raw, 1e-6 + (2e-8 + 3e-6) / 10.0), "raw {raw}");
        }
    }

    #[test]
    fn a_timer_that_never_moves_has_no_resolution() {
        let mut f = fake();
        f.read = 0.0;
        assert_eq!(overheads(&mut f, 5).resolution, 0.0);
    }
}
