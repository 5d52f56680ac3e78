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
    #[arg(long, value_name = "FROM:TO")]
    window: Option<String>,
    /// Also write a self-contained HTML report (tables, SVG figures, loop structure).
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

/// Runs `mpiscope report`.
pub fn report(a: ReportArgs) -> Result<i32> {
    let ReportArgs {
        dir,
        json,
        window,
        html,
        ranks_per_node,
        force,
    } = a;
    if let Some(out) = &html {
        mpiscope_files::check_output(out, &outputs::HTML_REPORT, force)?;
    }
    let run = crate::inputs::open_run(&dir)?;
    let window = match window {
        Some(w) => mpiscope_analyze::profile::Window::parse(&w)
            .map_err(|e| anyhow::anyhow!("--window: {e}"))?,
        None => mpiscope_analyze::profile::Window::ALL,
    };
    let options = mpiscope_analyze::report::ReportOptions {
        window,
        ranks_per_node,
    };
    let p = mpiscope_analyze::report::report(&run, &options)?;
    if let Some(out) = &html {
        use mpiscope_analyze::structure::{structure, Algorithm, Detail};
        let s = structure(&run, None, Detail::Low, Algorithm::Fold)?;
        let timeline = mpiscope_analyze::html::timeline_of_main_part(&run)?;
        let title = format!("mpiscope report: {}", dir.display());
        let page = mpiscope_analyze::html::report(&title, &p, Some(&s), timeline.as_ref());
        outputs::write(out, &outputs::HTML_REPORT, force, page.as_bytes())?;
    }
    let text = if json {
        serde_json::to_string_pretty(&p)? + "\n"
    } else {
        p.to_text()
    };
    outputs::write_stdout(&text)?;
    Ok(0)
}
