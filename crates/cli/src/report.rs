//! `mpiscope report`: per-function counts, times and bytes, per-rank compute and MPI time,
//! the communication matrix, how the record ends and the balance (`mpiscope_analyze`), as
//! tables, JSON or a self-contained HTML page.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::outputs;

/// Options of `mpiscope report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Run directory written by `mpiscope trace`.
    dir: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Only calls entering within FROM:TO, seconds since the run's start (`12.5:`,
    /// `:30`, `10:20`).
    #[arg(long, value_name = "FROM:TO", value_parser = window)]
    window: Option<mpiscope_analyze::profile::Window>,
    /// The part counted (within --window) and the bursts left out.
    #[command(flatten)]
    phase: crate::phaseflags::PhaseArgs,
    /// Also write a self-contained HTML report (run header, sortable tables, figures, an
    /// interactive timeline, loop structure).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Suggest a placement of ranks on nodes of this many ranks that lowers the
    /// point-to-point bytes between nodes.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    ranks_per_node: Option<u32>,
    /// Replace an existing output file that mpiscope did not write (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    force: bool,
}

/// `--window FROM:TO` (a usage error when it does not parse).
fn window(text: &str) -> Result<mpiscope_analyze::profile::Window, String> {
    mpiscope_analyze::profile::Window::parse(text)
}

/// A window in which no call of the run enters is an error naming the option and the times
/// the run's calls enter at.
fn check_window(
    run: &mpiscope_trace::RunDir,
    w: mpiscope_analyze::profile::Window,
    events: u64,
) -> Result<()> {
    if events > 0 {
        return Ok(());
    }
    let whole = mpiscope_analyze::profile::profile(run)?;
    let first = whole.per_rank.iter().map(|r| r.first_ns).min();
    let last = whole.per_rank.iter().map(|r| r.last_ns).max();
    let to = if w.end == u64::MAX {
        String::new()
    } else {
        format!("{}", w.end as f64 / 1e9)
    };
    match (first, last) {
        (Some(f), Some(l)) if whole.events > 0 => anyhow::bail!(
            "--window {}:{to}: no call enters within it; the run's calls enter from {:.6} s to {:.6} s",
            w.start as f64 / 1e9,
            f as f64 / 1e9,
            l as f64 / 1e9
        ),
        _ => Ok(()),
    }
}

/// Runs `mpiscope report`.
pub fn report(a: ReportArgs) -> Result<i32> {
    let ReportArgs {
        dir,
        json,
        window,
        phase,
        html,
        ranks_per_node,
        force,
    } = a;
    if let Some(out) = &html {
        mpiscope_files::check_output(out, &outputs::HTML_REPORT, force)?;
    }
    let run = crate::inputs::open_run(&dir)?;
    let options = mpiscope_analyze::report::ReportOptions {
        window: window.unwrap_or(mpiscope_analyze::profile::Window::ALL),
        ranks_per_node,
        phase: phase.resolve(&run)?,
        min_gap_ns: phase.min_gap,
    };
    let p = mpiscope_analyze::report::report(&run, &options)?;
    if let Some(w) = window {
        check_window(&run, w, p.profile.events)?;
    }
    if let Some(out) = &html {
        use mpiscope_analyze::structure::{structure, Algorithm, Detail};
        let s = structure(&run, None, Detail::Low, Algorithm::Fold, None)?;
        let timeline = mpiscope_analyze::html::timeline(
            &run,
            &p.profile,
            &mpiscope_analyze::html::TimelineOptions::default(),
        )?;
        let title = format!("mpiscope report: {}", dir.display());
        let header = mpiscope_analyze::html::RunHeader::of(&run);
        let page = mpiscope_analyze::html::report(&title, &header, &p, Some(&s), Some(&timeline));
        outputs::write(out, &outputs::HTML_REPORT, force, page.as_bytes())?;
    }
    let text = if json {
        outputs::json(&p)?
    } else {
        p.to_text()
    };
    outputs::write_stdout(&text)?;
    Ok(0)
}
