//! Checks of the numbers given on the command line (clap value parsers: an error names the
//! flag), the opening of run directories, and the warnings about inputs that the commands
//! print: records that end early (partial input is always announced, and JSON outputs say
//! so under `input`), platform options the simulator does not read, TI lines a `--lenient`
//! replay skipped.

use std::path::Path;

use anyhow::{Context, Result};
use mpiscope_analyze::ending::InputState;
use mpiscope_sim::platform::Platform;
use mpiscope_sim::workload::ti::SkippedLines;
use mpiscope_trace::RunDir;

/// A finite number above zero (`--traced-speed`, `--flops`).
pub fn positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a finite number above 0")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// A finite number, zero or more (`--weight-s`, `--tolerance`).
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a finite number of 0 or more")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// Opens the run directory `dir` (an error names it).
pub fn open_run(dir: &Path) -> Result<RunDir> {
    RunDir::open(dir).with_context(|| format!("cannot open the trace {}", dir.display()))
}

/// `--rank r` of `run`: an error naming the option and the run's ranks when it has no rank
/// `r`.
pub fn check_rank(r: u32, run: &RunDir) -> Result<()> {
    anyhow::ensure!(
        r < run.ranks(),
        "--rank {r}: the run has ranks 0 to {}",
        run.ranks().saturating_sub(1)
    );
    Ok(())
}

/// Says on stderr which ranks' records end early, and where (partial input is always
/// announced); returns the state for JSON outputs.
pub fn announce_input(run: &RunDir) -> InputState {
    let state = mpiscope_analyze::ending::skim(run);
    for w in state.warnings(8) {
        eprintln!("mpiscope: warning: {w}");
    }
    state
}

/// `value` with the input state under the key `input`.
pub fn with_input(value: impl serde::Serialize, input: &InputState) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(value)?;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("input".into(), serde_json::to_value(input)?);
    }
    Ok(v)
}

/// Prints the platform's warnings (options the simulator does not read), one line each.
pub fn warn_about_platform(p: &Platform) {
    for w in &p.warnings {
        eprintln!("mpiscope: warning: {w}");
    }
}

/// As [`warn_about_platform`], for a platform written inline in the study `study`: the
/// options are keys of its `[platform.config]` (the lines of the platform a point builds
/// are not the study's).
pub fn warn_about_inline_platform(p: &Platform, study: &std::path::Path) {
    for w in &p.warnings {
        eprintln!(
            "mpiscope: warning: {}: [platform.config] {}",
            study.display(),
            w.message
        );
    }
}

/// Prints what a `--lenient` reading skipped: how many lines, and the first few with their
/// file and line.
pub fn report_skipped(log: &SkippedLines) {
    let n = log.count();
    if n == 0 {
        return;
    }
    eprintln!(
        "mpiscope: warning: --lenient: skipped {n} line(s) of the TI trace that are not valid \
         actions{}",
        if n > log.first().len() as u64 {
            ", the first ones:"
        } else {
            ":"
        }
    );
    for m in log.first() {
        eprintln!("mpiscope: warning:   {m}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_are_not_finite_or_in_range_are_refused() {
        assert_eq!(positive("2e9"), Ok(2e9));
        for bad in ["0", "-1", "nan", "inf", "-inf", "x", ""] {
            assert!(positive(bad).is_err(), "{bad}");
        }
        assert_eq!(non_negative("0"), Ok(0.0));
        assert_eq!(non_negative(" 8775 "), Ok(8775.0));
        for bad in ["-1e-9", "NaN", "infinity", "1,2"] {
            assert!(non_negative(bad).is_err(), "{bad}");
        }
        assert_eq!(
            positive("nan").unwrap_err(),
            "NaN is not a finite number above 0"
        );
    }
}
