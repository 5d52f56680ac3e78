//! `mpiscope structure`: the loop structure of each rank (`mpiscope_analyze::structure`), as
//! text or JSON, or saved as the structural form `mpiscope replay` replays
//! (`mpiscope_sim::workload::structural`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use mpiscope_analyze::structure::{self as loops, Algorithm, Detail};

use mpiscope_analyze::structure::ApproxOptions;

use crate::outputs;

/// `--tolerance`: a fraction in [0, 0.5].
fn tolerance(s: &str) -> Result<f64, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a fraction such as 0.25)"))?;
    if (0.0..=0.5).contains(&t) {
        Ok(t)
    } else {
        Err(format!(
            "{s} is outside 0..0.5 (a fraction of an iteration's length)"
        ))
    }
}

/// Options of `mpiscope structure`.
#[derive(Args, Debug)]
pub struct StructureArgs {
    /// Run directory written by `mpiscope trace`.
    dir: PathBuf,
    /// Only this rank.
    #[arg(long)]
    rank: Option<u32>,
    /// `low`: call and callsite; `high`: also the peer (relative to the rank) and the
    /// message size class.
    #[arg(long, default_value = "low", value_parser = ["low", "high"])]
    detail: String,
    /// `fold` (linear-time loop folding) or `seed` ([Grosclaude 2012]'s runs and digrams).
    #[arg(long, default_value = "fold", value_parser = ["fold", "seed"])]
    algorithm: String,
    /// Print JSON (the tree with per-position statistics) instead of text.
    #[arg(long)]
    json: bool,
    /// Fold loops whose iterations differ by at most this fraction of their usual iteration
    /// (a step that also computes energies, a data-dependent exchange count): the usual
    /// iteration is shown and the others' differences listed with the iterations they occur
    /// in (JSON: `approximate`). `0` prints the exact folding alone, one numbered line per
    /// top-level item. At most 0.5.
    #[arg(long, default_value_t = 0.25, value_parser = tolerance)]
    tolerance: f64,
    /// Show everything: long stretches before and after loops, every difference, every
    /// callsite (text output).
    #[arg(long)]
    full: bool,
    /// Instead, save the structural form that `mpiscope replay FILE` replays: per rank
    /// the loop tree, every distinct call with all its recorded arguments, mean times.
    /// JSON, gzip-compressed when FILE ends in `.gz`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rank", "json"])]
    save: Option<PathBuf>,
    /// Replace an existing output file that mpiscope did not write (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    force: bool,
    /// No message about the saved form (warnings and errors are still printed).
    #[arg(short, long)]
    quiet: bool,
}

/// Runs `mpiscope structure`.
pub fn structure(a: StructureArgs) -> Result<i32> {
    if let Some(out) = &a.save {
        mpiscope_files::check_output(out, &outputs::STRUCTURAL_FORM, a.force)?;
    }
    let run = crate::inputs::open_run(&a.dir)?;
    let input = crate::inputs::announce_input(&run);
    if let Some(out) = a.save {
        let approx = (a.tolerance > 0.0).then(|| ApproxOptions {
            tolerance: a.tolerance,
            ..ApproxOptions::default()
        });
        let form = mpiscope_sim::workload::structural::save(&run, approx.as_ref())?;
        let bytes = mpiscope_sim::workload::structural::write_file(&form, &out)?;
        if !a.quiet {
            eprintln!(
                "mpiscope: structural form of {} rank(s) in {} ({bytes} bytes)",
                form.ranks.len(),
                out.display(),
            );
        }
        return Ok(0);
    }
    if let Some(r) = a.rank {
        crate::inputs::check_rank(r, &run)?;
    }
    let only = a.rank.map(|r| vec![r]);
    let detail = if a.detail == "high" {
        Detail::High
    } else {
        Detail::Low
    };
    let algorithm = if a.algorithm == "seed" {
        Algorithm::Seed
    } else {
        Algorithm::Fold
    };
    let approx = (a.tolerance > 0.0).then(|| ApproxOptions {
        tolerance: a.tolerance,
        ..ApproxOptions::default()
    });
    let s = loops::structure(&run, only.as_deref(), detail, algorithm, approx.as_ref())?;
    let text = if a.json {
        outputs::json(&crate::inputs::with_input(&s, &input)?)?
    } else {
        s.to_approx_text(a.full).unwrap_or_else(|| s.to_text())
    };
    outputs::write_stdout(&text)?;
    Ok(0)
}
