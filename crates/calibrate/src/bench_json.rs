//! The parts of `mpiscope-bench --json` output that calibration reads (one reader for the
//! network fit, the protocol and the measured-versus-predicted comparison).

use serde::Deserialize;

use crate::CalibrationError;

/// A results file.
#[derive(Deserialize)]
pub(crate) struct BenchResults {
    /// Processes.
    #[serde(default)]
    pub np: u32,
    /// Parameters of the run.
    #[serde(default)]
    pub params: BenchParams,
    /// One row per operation, length and repeat.
    pub results: Vec<BenchRow>,
}

/// The run's parameters (0 or `None` when absent).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct BenchParams {
    /// T: timed iterations of the long operations.
    pub long_iters: u64,
    /// Runs of the operation per timed sample.
    pub reps: u64,
    /// R: global repeats.
    pub r: u64,
    /// Untimed iterations before each measurement.
    pub warmup: u64,
    /// How late EAGER SEND's receiver posts, seconds.
    pub eager_probe_delay: Option<f64>,
}

/// One measured operation and length.
#[derive(Deserialize)]
pub(crate) struct BenchRow {
    /// [MPITEST]'s name.
    #[serde(default)]
    pub operation: String,
    /// Short name.
    pub key: String,
    /// Length in integers (none for the fast operations).
    pub ints: Option<u64>,
    /// Corrected times.
    pub time: BenchTime,
    /// The operation alone (`--in-call`), when measured.
    #[serde(default)]
    pub in_call: Option<BenchTime>,
    /// Why the row was not measured.
    #[serde(default)]
    pub skipped: Option<String>,
}

/// Statistics of a row's corrected samples, seconds.
#[derive(Deserialize)]
pub(crate) struct BenchTime {
    /// Mean.
    #[serde(default)]
    pub mean: f64,
    /// Median.
    pub median: f64,
}

/// The median of `values` (the mean of the middle two for an even count); `values` must not
/// be empty, and is sorted.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

impl BenchResults {
    /// Parses `text`, read from `path` (named in the error).
    pub fn parse(text: &str, path: &str) -> Result<BenchResults, CalibrationError> {
        serde_json::from_str(text).map_err(|e| CalibrationError::Input {
            path: path.to_string(),
            message: e.to_string(),
        })
    }
}

/// A benchmark JSON of `(key, ints, median seconds)` rows, for unit tests.
#[cfg(test)]
pub(crate) fn rows_json(rows: &[(&str, u64, f64)]) -> String {
    use serde_json::json;
    let rows: Vec<_> = rows
        .iter()
        .map(|&(k, n, t)| json!({"key": k, "ints": n, "time": {"median": t}}))
        .collect();
    json!({ "results": rows }).to_string()
}
