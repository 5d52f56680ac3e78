//! The cost of a reduction operator, from mpiscope-bench's REDUCE LOCAL (`reduce_local`:
//! `MPI_Reduce_local`, the sum of N integers into N others on one process, timed on rank 0
//! per call). A collective that reduces pays it on every buffer it combines, beyond its
//! messages; the simulator charges it as `mpiscope/reduction` (seconds per byte) on each
//! combine of a reducing algorithm.
//!
//! Estimate: the median over the measured sizes of at least [`MIN_BYTES`] of
//! `time / bytes`. Below that size a call's fixed cost (tens of nanoseconds) weighs more
//! than its bytes; the median keeps one slow size (a vector that leaves the caches) from
//! moving the value.

use mpiscope_sim::calibration::Calibration;
use serde::Serialize;

use crate::CalibrationError;

/// Smaller vectors are left out of the estimate, bytes.
pub const MIN_BYTES: u64 = 4096;

/// What REDUCE LOCAL says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reduction {
    /// Seconds per byte of operand.
    pub seconds_per_byte: f64,
    /// Sizes used.
    pub samples: usize,
}

impl Reduction {
    /// Reads the `reduce_local` rows of `mpiscope-bench --json` output; `None` when no size
    /// of at least [`MIN_BYTES`] was measured.
    pub fn from_bench(text: &str, path: &str) -> Result<Option<Reduction>, CalibrationError> {
        let b = crate::bench_json::BenchResults::parse(text, path)?;
        let mut by_size: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for r in &b.results {
            if r.key != "reduce_local" || r.skipped.is_some() || !r.time.median.is_finite() {
                continue;
            }
            match r.ints {
                Some(ints) if 4 * ints >= MIN_BYTES => {
                    by_size.entry(4 * ints).or_default().push(r.time.median)
                }
                _ => {}
            }
        }
        if by_size.is_empty() {
            return Ok(None);
        }
        let samples = by_size.len();
        let mut per_byte: Vec<f64> = by_size
            .into_iter()
            .map(|(bytes, mut t)| crate::bench_json::median(&mut t).max(0.0) / bytes as f64)
            .collect();
        Ok(Some(Reduction {
            seconds_per_byte: crate::bench_json::median(&mut per_byte),
            samples,
        }))
    }

    /// The rate, bytes of operand per second.
    pub fn bytes_per_second(&self) -> f64 {
        1.0 / self.seconds_per_byte.max(1e-15)
    }

    /// The platform `[config]` lines: a comment and `mpiscope/reduction`.
    pub fn config_lines(&self) -> String {
        let measured = Calibration {
            reduction: Some(self.seconds_per_byte),
            ..Calibration::default()
        };
        format!(
            "# a reduction operator combines {:.2} GB/s (REDUCE LOCAL, {} sizes)\n{}",
            self.bytes_per_second() / 1e9,
            self.samples,
            measured.to_config()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_json::rows_json as bench;

    #[test]
    fn the_median_cost_per_byte_of_the_large_vectors() {
        let text = bench(&[
            // Small vectors: the call's fixed cost, left out.
            ("reduce_local", 2, 30e-9),
            ("reduce_local", 512, 200e-9),
            // 4 KiB, 64 KiB (two repeats), 1 MiB out of the caches.
            ("reduce_local", 1024, 0.5e-6),
            ("reduce_local", 16384, 8.0e-6),
            ("reduce_local", 16384, 9.0e-6),
            ("reduce_local", 262144, 400e-6),
            ("send_recv", 16384, 1.0),
        ]);
        let r = Reduction::from_bench(&text, "b.json").unwrap().unwrap();
        assert_eq!(r.samples, 3);
        // Per byte: 0.5e-6 / 4096, 8.5e-6 / 65536, 400e-6 / 1048576: the middle one.
        let want = 8.5e-6 / 65536.0;
        assert!((r.seconds_per_byte - want).abs() < 1e-20, "{r:?}");
        let lines = r.config_lines();
        assert!(lines.contains("REDUCE LOCAL, 3 sizes"), "{lines}");
        let value = lines
            .lines()
            .find_map(|l| l.strip_prefix("\"mpiscope/reduction\" = "))
            .unwrap();
        assert_eq!(value.parse::<f64>().unwrap(), want);
    }

    #[test]
    fn absent_when_not_measured() {
        let only_small = bench(&[("reduce_local", 2, 30e-9), ("send_recv", 2, 1e-6)]);
        assert_eq!(Reduction::from_bench(&only_small, "b").unwrap(), None);
        let e = Reduction::from_bench("[]", "b.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.json"), "{e}");
    }
}
