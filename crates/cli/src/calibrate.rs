//! `mpiscope calibrate RESULTS.json -o platform.toml`: fits the flow model to
//! `mpiscope-bench --json` results and writes a one-host platform with the fitted factors.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use mpiscope_calibrate::{fit, points_from_bench, Network};

/// Options of `mpiscope calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// `mpiscope-bench --json` output with a `send_recv` size sweep (2 ranks or more).
    results: PathBuf,
    /// Platform file to write (TOML).
    #[arg(short, long)]
    output: PathBuf,
    /// At most this many linear pieces.
    #[arg(long, default_value_t = 4)]
    pieces: usize,
    /// Take the fewest pieces whose every point is within this relative error.
    #[arg(long, default_value_t = 0.05)]
    tolerance: f64,
    /// Print the fit as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `mpiscope calibrate`.
pub fn calibrate(a: CalibrateArgs) -> Result<i32> {
    let path = a.results.display().to_string();
    let text =
        std::fs::read_to_string(&a.results).with_context(|| format!("cannot read {path}"))?;
    let (points, np) = points_from_bench(&text, &path)?;
    let f = fit(&points, a.pieces, a.tolerance)?;
    let net = Network::from_fit(&f);
    std::fs::write(&a.output, net.platform_toml(np.max(1), &path))
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    if a.json {
        let j = serde_json::json!({ "points": points, "fit": f, "network": net });
        crate::write_stdout(&(serde_json::to_string_pretty(&j)? + "\n"))?;
    } else {
        let mut s = format!(
            "{} sizes from {path}; nominal latency {:.3} us, bandwidth {:.1} MB/s; R^2 {:.5}\n",
            points.len(),
            net.latency * 1e6,
            net.bandwidth / 1e6,
            f.r2
        );
        for p in &f.pieces {
            s += &format!(
                "  {:>10} .. {:<10} bytes: {:.3} us + S / {:.1} MB/s (largest error {:.1}%)\n",
                p.from_bytes,
                p.to_bytes,
                p.latency * 1e6,
                p.bandwidth / 1e6,
                p.max_error * 100.0
            );
        }
        s += &format!(
            "wrote {} (replay with --mapping sequential:{np})\n",
            a.output.display()
        );
        crate::write_stdout(&s)?;
    }
    Ok(0)
}
