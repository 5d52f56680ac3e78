//! `mpiscope hpl`: simulate HPL (from a standard `HPL.dat`) on a modeled platform.
//!
//! The skeleton is `mpiscope-hpl`; this file loads the platform, configures the simulation
//! with the shared simulation flags (`simflags.rs`), runs every configuration of the
//! `HPL.dat` and prints HPL's result lines (or JSON).

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use mpiscope_hpl::HplDat;

use crate::simflags::SimArgs;

/// Options of `mpiscope hpl`.
#[derive(Args, Debug)]
pub struct HplArgs {
    /// A standard HPL input file (`HPL.dat`).
    dat: PathBuf,
    /// Platform: SimGrid XML (v4.1) or mpiscope TOML (with `mpiscope/dgemm`,
    /// `mpiscope/dtrsm` and `mpiscope/panel` kernel models in `[config]` when calibrated).
    #[arg(long)]
    platform: PathBuf,
    /// Placement, network model, MPI library (HPL's own messages are point-to-point: the
    /// collective flags apply to the engine, not to HPL's broadcasts).
    #[command(flatten)]
    sim: SimArgs,
    /// Print a JSON list (one object per configuration).
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
    /// Pivot exchanges of the panel factorization: `aggregated` (three exchange patterns per
    /// panel, the second timed and standing for the columns between it and the last:
    /// docs/BENCHMARKS.md measures the difference) or `messages` (one per panel column, as
    /// HPL).
    #[arg(long, default_value = "aggregated", value_parser = ["aggregated", "messages"])]
    pivots: String,
    /// The trailing update's probes of a pending broadcast: `aggregated` (the chunks of NB
    /// columns that a probe follows run as one computation cut short after the chunk the
    /// broadcast arrives in; the same dates, and `chunks` whenever probes cost time,
    /// `smpi/iprobe` above 0 as under `--network smpi`) or `chunks` (a computation and a
    /// probe per chunk, as HPL).
    #[arg(long, default_value = "aggregated", value_parser = ["aggregated", "chunks"])]
    polls: String,
    /// Write the simulated timeline (what each rank does when: `compute`, `pack`,
    /// `scheduler`, MPI calls) as Chrome trace JSON (Perfetto); HPL.dat must then hold one
    /// configuration.
    #[arg(long)]
    timeline: Option<PathBuf>,
    /// Replace an existing output file that mpiscope did not write (never a directory, a
    /// symbolic link or a special file).
    #[arg(long)]
    force: bool,
}

/// Runs `mpiscope hpl`.
pub fn hpl(a: HplArgs) -> Result<i32> {
    if let Some(path) = &a.timeline {
        // Judged before the simulation, so a refused output costs nothing.
        mpiscope_files::check_output(path, &crate::outputs::TIMELINE, a.force)?;
    }
    let text = std::fs::read_to_string(&a.dat)
        .map_err(|e| anyhow!("cannot read {}: {e}", a.dat.display()))?;
    let dat = HplDat::parse(&text, &a.dat.display().to_string())?;
    let platform = crate::simflags::load_platform(&a.platform)?;
    let mut config = a.sim.config(&platform, &a.platform)?;
    config.timeline = a.timeline.is_some();
    let mapping = a.sim.placement.mapping()?;
    let mut out = String::new();
    let mut json = Vec::new();
    if !a.json {
        out += &header();
    }
    let runs = configured_runs(&a, &dat)?;
    for run in &runs {
        let r = with_progress_bar(run, !a.quiet, |progress| {
            mpiscope_hpl::simulate_with_progress(run, &platform, config.clone(), &mapping, progress)
        })
        .map_err(|e| anyhow!("{}: {e}", a.dat.display()))?;
        if let Some(path) = &a.timeline {
            write_timeline(path, &r, a.force)?;
        }
        if a.json {
            json.push(serde_json::json!({
                "tv": run.code(),
                "n": run.n,
                "nb": run.nb,
                "p": run.p,
                "q": run.q,
                "time_s": r.time_s,
                "gflops": r.gflops,
                "energy_j": r.energy_j,
                "sim_wall_s": r.sim_wall_s,
                "messages": r.messages,
                "pivots": a.pivots,
                "polls": a.polls,
                "bind_to": a.sim.placement.bind_to,
            }));
        } else {
            out += &format!(
                "{:<8}{:>12} {:>5} {:>5} {:>5} {:>18.2}    {:>19}\n",
                run.code(),
                run.n,
                run.nb,
                run.p,
                run.q,
                r.time_s,
                c_exp(r.gflops, 4)
            );
        }
    }
    if a.json {
        crate::outputs::write_stdout(&(serde_json::to_string_pretty(&json)? + "\n"))?;
    } else {
        out += &summary(runs.len());
        crate::outputs::write_stdout(&out)?;
    }
    Ok(0)
}

/// The configurations of `dat`, with the command's choices of pivots, polls and phases.
fn configured_runs(a: &HplArgs, dat: &HplDat) -> Result<Vec<mpiscope_hpl::Run>> {
    let mut runs = dat.runs();
    let pivots = if a.pivots == "messages" {
        mpiscope_hpl::Pivots::Messages
    } else {
        mpiscope_hpl::Pivots::Aggregated
    };
    let polls = if a.polls == "chunks" {
        mpiscope_hpl::Polls::Chunks
    } else {
        mpiscope_hpl::Polls::Aggregated
    };
    for run in &mut runs {
        run.pivots = pivots;
        run.polls = polls;
        run.phases = a.timeline.is_some();
    }
    if let (Some(path), n @ 2..) = (&a.timeline, runs.len()) {
        bail!(
            "--timeline {}: {} holds {n} configurations, the timeline takes one",
            path.display(),
            a.dat.display()
        );
    }
    Ok(runs)
}

/// Writes the timeline of `r` to `path`, spans named by HPL phase.
fn write_timeline(path: &std::path::Path, r: &mpiscope_hpl::HplResult, force: bool) -> Result<()> {
    let mut w = mpiscope_files::AtomicFile::create_output(path, &crate::outputs::TIMELINE, force)?;
    mpiscope_sim::report::write_chrome_trace(&r.timeline, &mpiscope_hpl::phase_name, &mut w)
        .with_context(|| format!("cannot write {}", path.display()))?;
    w.commit()?;
    Ok(())
}

/// Runs `simulate` with a progress bar of the panels on a terminal's stderr (when `shown`).
fn with_progress_bar<T>(
    run: &mpiscope_hpl::Run,
    shown: bool,
    simulate: impl FnOnce(Option<std::sync::Arc<std::sync::atomic::AtomicU64>>) -> T,
) -> T {
    use std::io::IsTerminal;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    if !shown || !std::io::stderr().is_terminal() {
        return simulate(None);
    }
    let panels = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let bar = indicatif::ProgressBar::new(run.n.div_ceil(run.nb));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} panel {pos}/{len} {wide_bar} {elapsed} (eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_prefix(run.code());
    let drawer = {
        let (panels, done, bar) = (panels.clone(), done.clone(), bar.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                bar.set_position(panels.load(Ordering::Relaxed));
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        })
    };
    let r = simulate(Some(panels));
    done.store(true, Ordering::Release);
    let _ = drawer.join();
    bar.finish_and_clear();
    r
}

/// C's `%.{prec}e`: at least two exponent digits with a sign (`3.2190e+01`).
fn c_exp(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

const RULE: &str =
    "================================================================================";
const DASH: &str =
    "--------------------------------------------------------------------------------";

fn header() -> String {
    format!(
        "{RULE}\nT/V                N    NB     P     Q               Time                 Gflops\n{DASH}\n"
    )
}

fn summary(n: usize) -> String {
    format!(
        "{RULE}\n\nFinished {n:>6} tests with the following results:\n         \
         {n:>6} tests completed without checking,\n         \
         {:>6} tests skipped because of illegal input values.\n{DASH}\n\nEnd of Tests.\n{RULE}\n",
        0
    )
}

#[cfg(test)]
mod tests {
    use super::c_exp;

    #[test]
    fn exponents_print_as_c_does() {
        assert_eq!(c_exp(32.19, 4), "3.2190e+01");
        assert_eq!(c_exp(0.0012345, 2), "1.23e-03");
        assert_eq!(c_exp(1.5e123, 1), "1.5e+123");
    }
}
