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
//! nominal bandwidth), written as `mpiscope/pack` (seconds per byte). On this VM whole runs
//! land in a 5.6-6.7 GB/s mode now and then (repeats within a run agree), so calibrate close
//! to the runs being predicted.

use serde::Serialize;

use crate::CalibrationError;

/// Smaller messages are latency-bound and left out of the fit, bytes.
pub const MIN_BYTES: u64 = 64 << 10;

/// What VECTOR SEND says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Strided {
    /// Seconds per byte of a strided message (the fit's slope).
    pub seconds_per_byte: f64,
    /// Seconds per byte beyond a contiguous message (`mpiscope/pack`).
    pub extra_per_byte: f64,
    /// Rows fitted.
    pub samples: usize,
}

/// The slope (seconds per byte, at least 0) of `t = a + c S` fitted by least squares on the
/// per-size medians of the `key` rows of at least [`MIN_BYTES`], and how many sizes; `None`
/// for fewer than two sizes.
pub(crate) fn large_message_slope(
    b: &crate::bench_json::BenchResults,
    key: &str,
) -> Option<(f64, usize)> {
    let mut by_size: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for r in &b.results {
        if r.key != key || r.skipped.is_some() || !r.time.median.is_finite() {
            continue;
        }
        match r.ints {
            Some(ints) if 4 * ints >= MIN_BYTES => {
                by_size.entry(4 * ints).or_default().push(r.time.median)
            }
            _ => {}
        }
    }
    let points: Vec<(f64, f64)> = by_size
        .into_iter()
        .map(|(bytes, mut t)| (bytes as f64, crate::bench_json::median(&mut t)))
        .collect();
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    Some(((sxy / sxx).max(0.0), points.len()))
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
        let Some((slope, samples)) = large_message_slope(&b, "vector_send") else {
            return Ok(None);
        };
        Ok(Some(Strided {
            seconds_per_byte: slope,
            extra_per_byte: (slope - 1.0 / bandwidth).max(0.0),
            samples,
        }))
    }

    /// The strided messages' rate, GB/s.
    pub fn gigabytes_per_second(&self) -> f64 {
        1e-9 / self.seconds_per_byte.max(f64::MIN_POSITIVE)
    }

    /// The platform `[config]` lines.
    pub fn config_lines(&self, bandwidth: f64) -> String {
        format!(
            "# messages sent from a strided layout (HPL's panel): {:.2} GB/s against {:.2} \
             contiguous, over {} sizes\n\"mpiscope/pack\" = {:e}\n",
            self.gigabytes_per_second(),
            bandwidth / 1e9,
            self.samples,
            self.extra_per_byte
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
        let lines = s.config_lines(1e10);
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
}
