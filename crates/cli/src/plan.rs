//! `mpiscope plan STUDY.toml`: a capacity-planning sweep (see `mpiscope_plan::study` for the
//! file). Runs this process's share of the points on all cores, resumes from finished
//! points, and writes results.csv, results.json and the study's figures.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use mpiscope_plan::point::MpiSettings;
use mpiscope_plan::study::WorkloadSpec;
use mpiscope_plan::{HplRunner, ReplayRunner, RunOptions, Share, Study, WorkloadRunner};
use mpiscope_sim::coll::Selector;

use crate::simflags::MpiArgs;

/// Options of `mpiscope plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The study file (TOML): workload, base platform, axes, figures.
    study: PathBuf,
    /// Run the study over this trace (an mpiscope run directory, or a structural form
    /// saved by `mpiscope structure --save`) instead of its workload.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ti", "hpl"])]
    trace: Option<PathBuf>,
    /// Run the study over this SimGrid time-independent trace index.
    #[arg(long, value_name = "FILE", conflicts_with = "hpl")]
    ti: Option<PathBuf>,
    /// Run the study over the HPL skeleton with this HPL.dat.
    #[arg(long, value_name = "FILE")]
    hpl: Option<PathBuf>,
    /// Output directory (default: the study file's name without `.toml`, next to it).
    #[arg(short, long = "output", visible_alias = "out", value_name = "DIR")]
    out: Option<PathBuf>,
    /// Points simulated at once (default: the number of cores).
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Run only point N (again, even if finished), as each point's record says.
    #[arg(long, value_name = "N")]
    point: Option<usize>,
    /// Simulate nothing: write the results and figures from the points finished so far.
    #[arg(long)]
    report: bool,
    /// List the points and their settings, and exit.
    #[arg(long)]
    list: bool,
    /// No progress bar (the summary of what was done is still printed).
    #[arg(short, long)]
    quiet: bool,
    /// Print a JSON summary of the run on stdout: the points simulated, already finished,
    /// failed and not finished, the output directory and the files written.
    #[arg(long, conflicts_with = "list")]
    json: bool,
    /// Use an --output that holds another study's results (they are removed first: the
    /// studies are never mixed), and replace output files that mpiscope did not write.
    #[arg(long)]
    force: bool,
    /// Read a TI trace workload leniently: skip the lines that are not valid actions and
    /// say how many and which (without it such a line fails the points).
    #[arg(long)]
    lenient: bool,
    /// The MPI library at every point (recorded in each point's configuration).
    #[command(flatten)]
    mpi: MpiArgs,
}

/// Runs `mpiscope plan`.
pub fn plan(a: PlanArgs) -> Result<i32> {
    let study = study_of(&a)?;
    let points = study.points();
    if a.list {
        list(&study, &points)?;
        return Ok(0);
    }
    // The base platform's warnings, once (every point's platform derives from it).
    if let Some(p) = points.first() {
        if let Ok(setup) =
            mpiscope_plan::point::PointConfig::of(&study, p).and_then(|c| c.build(&study, p.index))
        {
            match &study.platform {
                mpiscope_plan::study::PlatformSpec::Inline(_) => {
                    crate::inputs::warn_about_inline_platform(&setup.platform, &a.study)
                }
                mpiscope_plan::study::PlatformSpec::File(_) => {
                    crate::inputs::warn_about_platform(&setup.platform)
                }
            }
        }
    }
    let out = a.out.clone().unwrap_or_else(|| a.study.with_extension(""));
    if out == a.study {
        bail!(
            "--output: give an output directory (the study file {} has no extension)",
            a.study.display()
        );
    }
    // Figure paths stay inside --out, and --out belongs to this study: checked before
    // anything runs.
    mpiscope_plan::outdir::figure_paths(&study, &out)?;
    mpiscope_plan::outdir::claim(&study, &out, a.force)?;
    let share = Share::from_launcher(|k| std::env::var(k).ok());
    let mut summary = Summary {
        schema: crate::outputs::SCHEMA,
        study: a.study.display().to_string(),
        output: out.display().to_string(),
        points: points.len(),
        ..Summary::default()
    };
    if !a.report {
        let s = simulate(&a, &study, &out, share, points.len())?;
        summary.simulated = s.simulated;
        summary.reused = s.reused;
        summary.failed = s.failed.iter().map(|(p, _)| *p).collect();
        if !s.failed.is_empty() {
            for (p, why) in &s.failed {
                eprintln!("mpiscope plan: point {p} failed: {why}");
            }
            print_summary(&a, &summary)?;
            bail!(
                "{} of the study's points failed (finished points are kept: fix and rerun)",
                s.failed.len()
            );
        }
    }
    if share.size > 1 && !a.report {
        // Processes sharing the study finish at different times: only one that sees every
        // point finished writes the results (the last to finish always does), so a partial
        // table never overwrites a complete one.
        let (_, missing) = mpiscope_plan::run::collect(&study, &out)?;
        if !missing.is_empty() {
            summary.unfinished = missing.len();
            print_summary(&a, &summary)?;
            eprintln!(
                "mpiscope plan: {} of {} points are another process's and not finished yet; \
                 the last process to finish writes the results (or run with --report)",
                missing.len(),
                points.len()
            );
            return Ok(0);
        }
    }
    let written = mpiscope_plan::write_results(&study, &out, a.force)?;
    if !written.missing.is_empty() {
        eprintln!(
            "mpiscope plan: {} of {} points not finished yet (other processes, or rerun); \
             results cover the finished ones",
            written.missing.len(),
            points.len()
        );
    }
    for f in &written.files {
        eprintln!("wrote {}", f.display());
    }
    summary.unfinished = written.missing.len();
    summary.files = written
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    print_summary(&a, &summary)?;
    Ok(0)
}

/// What `plan --json` prints.
#[derive(serde::Serialize, Default)]
struct Summary {
    schema: u32,
    /// The study file.
    study: String,
    /// The output directory.
    output: String,
    /// Points of the study.
    points: usize,
    /// Points this process simulated.
    simulated: usize,
    /// Points already finished (by an earlier run or another process).
    reused: usize,
    /// Points that failed, by index.
    failed: Vec<usize>,
    /// Points not finished yet (another process's, or failed).
    unfinished: usize,
    /// The result files written (none when another process writes them).
    files: Vec<String>,
}

/// Prints the summary with `--json`.
fn print_summary(a: &PlanArgs, s: &Summary) -> Result<()> {
    if a.json {
        crate::outputs::write_stdout(&(serde_json::to_string_pretty(s)? + "\n"))?;
    }
    Ok(())
}

/// The study file with what the command line gives instead: the workload, the MPI library.
fn study_of(a: &PlanArgs) -> Result<Study> {
    let mut study = Study::from_path(&a.study)?;
    if let Some(p) = &a.trace {
        study.workload = Some(WorkloadSpec::Trace(p.clone()));
    } else if let Some(p) = &a.ti {
        study.workload = Some(WorkloadSpec::Ti(p.clone()));
    } else if let Some(p) = &a.hpl {
        study.workload = Some(WorkloadSpec::Hpl(p.clone()));
    }
    // Checked here, so a wrong flag stops the study before any point; the defaults are
    // left unset (the points' records and keys stay those of a study without the flags).
    let selector = a.mpi.selector()?;
    study.mpi = MpiSettings {
        collectives: (selector != Selector::Ompi).then(|| selector.name().to_string()),
        algorithms: a
            .mpi
            .forced()?
            .into_iter()
            .map(|(kind, name)| format!("{kind}={name}"))
            .collect(),
        eager_threshold: a.mpi.eager_threshold,
    };
    Ok(study)
}

/// `--list`: the points and their settings.
fn list(study: &Study, points: &[mpiscope_plan::study::Point]) -> Result<()> {
    let mut text = String::new();
    for p in points {
        let settings: Vec<String> = study
            .axes
            .iter()
            .zip(&p.values)
            .map(|(ax, v)| format!("{} = {}", ax.name, mpiscope_plan::study::value_text(v)))
            .collect();
        text.push_str(&format!("{:5}  {}\n", p.index, settings.join(", ")));
    }
    crate::outputs::write_stdout(&text)
}

/// The command that runs the study again as this one does (each point's record holds it,
/// with `--point N`).
fn rerun_command(a: &PlanArgs, out: &std::path::Path) -> String {
    let mut c = format!(
        "mpiscope plan {} --output {}",
        a.study.display(),
        out.display()
    );
    for (flag, path) in [("--trace", &a.trace), ("--ti", &a.ti), ("--hpl", &a.hpl)] {
        if let Some(p) = path {
            c += &format!(" {flag} {}", p.display());
        }
    }
    if a.lenient {
        c += " --lenient";
    }
    if a.mpi.collectives != "ompi" {
        c += &format!(" --collectives {}", a.mpi.collectives);
    }
    for f in &a.mpi.algorithms {
        c += &format!(" --algorithm {f}");
    }
    if let Some(t) = a.mpi.eager_threshold {
        c += &format!(" --eager-threshold {t}");
    }
    c
}

/// Simulates this process's share of the points, with a progress bar; what was done.
fn simulate(
    a: &PlanArgs,
    study: &Study,
    out: &std::path::Path,
    share: Share,
    points: usize,
) -> Result<mpiscope_plan::RunSummary> {
    let skipped = mpiscope_sim::workload::ti::SkippedLines::default();
    let runner: Box<dyn WorkloadRunner> = match &study.workload {
        None => bail!(
            "{}: no workload: give one in the study (workload = {{ trace = \"DIR\" }}) \
             or with --trace DIR, --ti FILE or --hpl HPL.dat",
            a.study.display()
        ),
        Some(w @ WorkloadSpec::Ti(_)) if a.lenient => {
            Box::new(ReplayRunner::new(w, study.traced_speed)?.lenient(skipped.clone()))
        }
        Some(w @ (WorkloadSpec::Trace(_) | WorkloadSpec::Ti(_))) => {
            Box::new(ReplayRunner::new(w, study.traced_speed)?)
        }
        Some(WorkloadSpec::Hpl(p)) => Box::new(HplRunner::from_path(p)?),
    };
    if a.lenient && !matches!(study.workload, Some(WorkloadSpec::Ti(_))) {
        bail!(
            "--lenient: the study's workload is not a TI trace; only TI traces are read leniently"
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let options = RunOptions {
        out: out.to_path_buf(),
        threads: a.jobs.map_or(cores, |j| j as usize).max(1),
        share,
        only: a.point,
        command: rerun_command(a, out),
    };
    let bar = (!a.quiet).then(|| {
        let b = indicatif::ProgressBar::new(points as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} points [{elapsed} elapsed, {eta} left]",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let summary = mpiscope_plan::run(study, runner.as_ref(), &options, &|p| {
        if let Some(b) = &bar {
            b.set_length(p.total as u64);
            b.set_position(p.done as u64);
        }
    })
    .with_context(|| format!("study {}", a.study.display()))?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    crate::inputs::report_skipped(&skipped);
    eprintln!(
        "mpiscope plan: {} point(s) simulated, {} already finished{}",
        summary.simulated,
        summary.reused,
        if share.size > 1 {
            format!(" (share {} of {})", share.rank, share.size)
        } else {
            String::new()
        }
    );
    Ok(summary)
}
