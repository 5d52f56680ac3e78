//! The oversubscribed wake-up delay: how long a rank waiting in MPI takes to get its core
//! back when it shares the core with a computing rank, from mpiscope-bench's SIGNAL WITH
//! BUSY CORES (`busy_signal`: half a zero-byte round trip between two ranks that each share
//! their core with a rank computing outside MPI). The simulator's CPU model delays a
//! waiting rank on an oversubscribed core by this much when its message arrives while the
//! core computes (`mpiscope/oversubscribed-wake-up`).

use mpiscope_sim::calibration::Calibration;

use crate::CalibrationError;

/// The wake-up delay in seconds: the median of the `busy_signal` rows' medians of
/// `mpiscope-bench --json` output, less `latency` (the one-way time without contention);
/// `None` when the run has no such row.
pub fn wake_up_from_bench(
    text: &str,
    path: &str,
    latency: f64,
) -> Result<Option<f64>, CalibrationError> {
    let b = crate::bench_json::BenchResults::parse(text, path)?;
    let mut medians: Vec<f64> = b
        .results
        .iter()
        .filter(|r| r.key == "busy_signal" && r.skipped.is_none())
        .map(|r| r.time.median)
        .filter(|t| t.is_finite())
        .collect();
    if medians.is_empty() {
        return Ok(None);
    }
    let median = crate::bench_json::median(&mut medians);
    Ok(Some((median - latency).max(0.0)))
}

/// The platform `[config]` lines for a wake-up delay of `seconds`.
pub fn config_lines(seconds: f64) -> String {
    let measured = Calibration {
        oversubscribed_wake_up: Some(seconds),
        ..Calibration::default()
    };
    format!(
        "# a rank waiting in MPI on an oversubscribed core gets it back {:.3} ms after its \
         message arrives while the core computes\n{}",
        seconds * 1e3,
        measured.to_config()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_median_of_the_repeats_less_the_latency() {
        let rows: Vec<_> = [1.2e-3, 1.5e-3, 1.4e-3]
            .iter()
            .map(|t| json!({"key": "busy_signal", "ints": null, "time": {"median": t}}))
            .chain([json!({"key": "signal", "ints": null, "time": {"median": 1e-6}})])
            .collect();
        let text = json!({ "results": rows }).to_string();
        let d = wake_up_from_bench(&text, "b.json", 1e-6).unwrap().unwrap();
        assert!((d - 1.399e-3).abs() < 1e-12, "{d}");
        let none = json!({ "results": [{"key": "signal", "time": {"median": 1e-6}}] });
        assert_eq!(
            wake_up_from_bench(&none.to_string(), "b.json", 0.0).unwrap(),
            None
        );
        assert!(config_lines(d).contains("\"mpiscope/oversubscribed-wake-up\" = 1.399e-3"));
    }
}
