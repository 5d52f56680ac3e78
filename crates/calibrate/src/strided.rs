//! The extra cost of a message sent from a strided layout, from mpiscope-bench's VECTOR
//! SEND (`vector_send`: a vector datatype on the sending side, contiguous on the receiving
//! side, caches cold), as HPL's panel broadcast sends its panel out of the matrix into the
//! receiver's workspace. MPI libraries pack such messages through bounce buffers instead
//! of copying them once: on shared memory here 2.1 GB/s against 5-6 GB/s contiguous from
//! memory (COLD SEND, [`crate::cold`]).
//!
//! Fit: `t = a + c S` by least squares over the sizes of at least [`MIN_BYTES`], each the
//! median of its repeats; the extra cost per byte is `c - 1 / B` (at least 0) with `B` the
//! contiguous rate the caller passes (COLD SEND's when measured, else the network fit's
//! nominal bandwidth), written as `mpiscope/pack` (seconds per byte). On this VM the rate
//! changes with the minute: whole runs land in a 4.9-7 GB/s phase for minutes at a time,
//! then back at 1.9-2.2 (repeats within a run agree, and a C program sending the same
//! datatype follows the same phases). HPL's panels never showed the fast phase: 2.0-2.5 GB/s
//! in every traced run, and real 1 x 2 runs at N = 2,000 (where the panels are 13% of the
//! time) took 0.079-0.085 s whether VECTOR SEND measured 2 or 6 GB/s just before and after.
//! So [`Strided::from_runs`] takes several runs (`scripts/bench-hpl-real.sh` makes one after
//! each `hpcc` launch) and keeps the slowest.

use mpiscope_sim::calibration::Calibration;
use serde::Serialize;

use crate::large::large_message_slope;
pub use crate::large::MIN_BYTES;
use crate::CalibrationError;

/// What VECTOR SEND says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Strided {
    /// Seconds per byte of a strided message (the fit's slope).
    pub seconds_per_byte: f64,
    /// Seconds per byte beyond a contiguous message (`mpiscope/pack`).
    pub extra_per_byte: f64,
    /// Rows fitted.
    pub samples: usize,
    /// The contiguous rate the extra cost is counted against, bytes per second.
    pub contiguous: f64,
    /// With [`Strided::from_runs`]: every run's strided rate, GB/s, in the order given.
    pub runs_gigabytes_per_second: Vec<f64>,
}

impl Strided {
    /// Fits the `vector_send` rows of `mpiscope-bench --json` output against the contiguous
    /// `bandwidth` (bytes per second: COLD SEND's when measured, as VECTOR SEND's caches are
    /// cold too); `None` when fewer than two sizes of at least [`MIN_BYTES`] were measured.
    pub fn from_bench(
        text: &str,
        path: &str,
        bandwidth: f64,
    ) -> Result<Option<Strided>, CalibrationError> {
        let b = crate::bench_json::BenchResults::parse(text, path)?;
        Ok(Self::fit(&b, bandwidth))
    }

    /// Fits each of several `mpiscope-bench --json` outputs (`(text, path)`: VECTOR SEND
    /// measured at several moments, between the runs being predicted) on its own, against
    /// its own COLD SEND when it has one (measured at the same moment, else `bandwidth`),
    /// and keeps the slowest: the phase HPL's panels run in on this VM (see the module
    /// docs). `None` when no run has two sizes of at least [`MIN_BYTES`].
    pub fn from_runs(
        runs: &[(String, String)],
        bandwidth: f64,
    ) -> Result<Option<Strided>, CalibrationError> {
        let mut fits = Vec::new();
        for (text, path) in runs {
            let b = crate::bench_json::BenchResults::parse(text, path)?;
            let contiguous = crate::cold::Cold::from_results(&b)
                .filter(|c| c.seconds_per_byte > 0.0)
                .map_or(bandwidth, |c| c.bytes_per_second());
            fits.extend(Self::fit(&b, contiguous));
        }
        let rates = fits.iter().map(Strided::gigabytes_per_second).collect();
        let slowest = fits
            .into_iter()
            .max_by(|a, b| a.seconds_per_byte.total_cmp(&b.seconds_per_byte));
        Ok(slowest.map(|s| Strided {
            runs_gigabytes_per_second: rates,
            ..s
        }))
    }

    fn fit(b: &crate::bench_json::BenchResults, bandwidth: f64) -> Option<Strided> {
        let (slope, samples) = large_message_slope(b, "vector_send")?;
        Some(Strided {
            seconds_per_byte: slope,
            extra_per_byte: (slope - 1.0 / bandwidth).max(0.0),
            samples,
            contiguous: bandwidth,
            runs_gigabytes_per_second: Vec::new(),
        })
    }

    /// The strided messages' rate, GB/s.
    pub fn gigabytes_per_second(&self) -> f64 {
        1e-9 / self.seconds_per_byte.max(f64::MIN_POSITIVE)
    }

    /// The platform `[config]` lines.
    pub fn config_lines(&self) -> String {
        let measured = Calibration {
            pack: Some(self.extra_per_byte),
            ..Calibration::default()
        };
        format!(
            "# messages sent from a strided layout (HPL's panel): {:.2} GB/s against {:.2} \
             contiguous, over {} sizes\n{}",
            self.gigabytes_per_second(),
            self.contiguous / 1e9,
            self.samples,
            measured.to_config()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_slope_beyond_the_contiguous_bandwidth() {
        // 2 GB/s plus 10 us: 0.5 ns per byte; contiguous at 10 GB/s: 0.1 ns per byte.
        // Three repeats of each size, one of them in the fast mode (x 0.4): the medians fit.
        let rows: Vec<_> = [1u64 << 16, 1 << 18, 1 << 20, 16]
            .iter()
            .flat_map(|&ints| {
                let t = 10e-6 + (4 * ints) as f64 * 0.5e-9;
                [t, 0.4 * t, t]
                    .map(|t| json!({"key": "vector_send", "ints": ints, "time": {"median": t}}))
            })
            .collect();
        let text = json!({ "results": rows }).to_string();
        let s = Strided::from_bench(&text, "b.json", 1e10).unwrap().unwrap();
        assert_eq!(s.samples, 3);
        assert!((s.seconds_per_byte - 0.5e-9).abs() < 1e-15, "{s:?}");
        assert!((s.extra_per_byte - 0.4e-9).abs() < 1e-15, "{s:?}");
        let lines = s.config_lines();
        let value: f64 = lines
            .split("\"mpiscope/pack\" = ")
            .nth(1)
            .and_then(|v| v.trim().parse().ok())
            .unwrap();
        assert!(
            (value - 0.4e-9).abs() < 1e-15 && lines.contains("2.00 GB/s"),
            "{lines}"
        );
        let none =
            json!({ "results": [{"key": "send_recv", "ints": 1024, "time": {"median": 1e-6}}] });
        assert_eq!(
            Strided::from_bench(&none.to_string(), "b.json", 1e10).unwrap(),
            None
        );
    }

    #[test]
    fn of_runs_at_several_moments_the_slowest_is_kept_against_its_own_cold_rate() {
        // Three runs: two in the fast phase (0.15 and 0.16 ns per byte), one slow (0.5 ns per
        // byte, its COLD SEND at 5 GB/s, 0.2 ns per byte, which replaces the 10 GB/s given).
        let run = |per_byte: f64, cold: bool| {
            let rows: Vec<_> = [1u64 << 18, 1 << 20]
                .iter()
                .flat_map(|&ints| {
                    let bytes = (4 * ints) as f64;
                    let mut r = vec![json!({"key": "vector_send", "ints": ints,
                                            "time": {"median": 1e-5 + bytes * per_byte}})];
                    if cold {
                        r.push(json!({"key": "cold_send", "ints": ints,
                                      "time": {"median": 1e-5 + bytes * 0.2e-9}}));
                    }
                    r
                })
                .collect();
            json!({ "results": rows }).to_string()
        };
        let runs: Vec<(String, String)> = [(0.15e-9, false), (0.5e-9, true), (0.16e-9, true)]
            .iter()
            .enumerate()
            .map(|(i, &(c, cold))| (run(c, cold), format!("strided-{i}.json")))
            .collect();
        let s = Strided::from_runs(&runs, 1e10).unwrap().unwrap();
        assert!((s.seconds_per_byte - 0.5e-9).abs() < 1e-15, "{s:?}");
        assert!((s.contiguous - 5e9).abs() < 1.0, "{s:?}");
        assert!((s.extra_per_byte - 0.3e-9).abs() < 1e-15, "{s:?}");
        let rates: Vec<String> = s
            .runs_gigabytes_per_second
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect();
        assert_eq!(rates, ["6.67", "2.00", "6.25"]);
        // A fast run alone: no extra cost over the given rate... nor over its own.
        let fast = Strided::from_runs(&runs[..1], 1e9).unwrap().unwrap();
        assert!((fast.extra_per_byte - (0.15e-9 - 1e-9f64).max(0.0)).abs() < 1e-15);
        // A file that is not bench output is named; no usable run is `None`.
        let bad = vec![(String::from("{"), String::from("broken.json"))];
        let e = Strided::from_runs(&bad, 1e10).unwrap_err().to_string();
        assert!(e.contains("broken.json"), "{e}");
        assert_eq!(Strided::from_runs(&[], 1e10).unwrap(), None);
    }
}
