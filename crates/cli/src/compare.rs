//! `mpiscope compare`: runs of one program side by side (`mpiscope_analyze::compare`), as
//! tables, JSON or an HTML page of scaling curves.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::outputs;

/// Options of `mpiscope compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Run directories (any order: they are sorted by rank count).
    #[arg(required = true, num_args = 2..)]
    dirs: Vec<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// The part of each run counted and the bursts left out.
    #[command(flatten)]
    phase: crate::phaseflags::PhaseArgs,
    /// Also write a self-contained HTML page of scaling curves against the rank count
    /// (wall and application time, speedup, parallel efficiency, burst harmonic mean and
    /// mean with their spread across ranks, calls per rank, bytes per call, MPI fraction).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Replace an existing output file that mpiscope did not write (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    force: bool,
}

/// Runs `mpiscope compare`.
pub fn compare(a: CompareArgs) -> Result<i32> {
    if let Some(out) = &a.html {
        // Judged before the work, so a refused output costs nothing.
        mpiscope_files::check_output(out, &outputs::HTML_REPORT, a.force)?;
    }
    let mut runs = Vec::new();
    for d in &a.dirs {
        let run = crate::inputs::open_run(d)?;
        for w in mpiscope_analyze::ending::skim(&run).warnings(8) {
            eprintln!("mpiscope: warning: {}: {w}", d.display());
        }
        let phase = a.phase.resolve(&run)?;
        let options = mpiscope_analyze::profile::ProfileOptions {
            windows: phase.windows(mpiscope_analyze::profile::Window::ALL),
            phase,
            min_gap_ns: a.phase.min_gap,
        };
        runs.push((
            d.display().to_string(),
            mpiscope_analyze::profile::profile_with(&run, &options)?,
        ));
    }
    let c = mpiscope_analyze::compare::compare(&runs);
    if let Some(out) = &a.html {
        let page = mpiscope_analyze::html::scaling("mpiscope compare: scaling", &c);
        outputs::write(out, &outputs::HTML_REPORT, a.force, page.as_bytes())?;
    }
    let text = if a.json {
        outputs::json(&c)?
    } else {
        c.to_text()
    };
    outputs::write_stdout(&text)?;
    Ok(0)
}
