//! `mpiscope replay`: simulate a trace on a modeled platform.
//!
//! The input is an mpiscope run directory, a structural form (`mpiscope structure --save`)
//! or a SimGrid time-independent trace index, read by `mpiscope_sim::workload::open`; the
//! platform a SimGrid XML or mpiscope TOML file; ranks are placed by a hostfile or a
//! mapping, and the simulation configured by the shared simulation flags (`simflags.rs`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use mpiscope_sim::report::{write_chrome_trace, Report};
use mpiscope_sim::workload::{self, ti, trace, InputKind, OpenOptions};
use mpiscope_sim::{SimResult, Simulation};

use crate::simflags::SimArgs;

/// Options of `mpiscope replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// An mpiscope run directory, a structural form (`mpiscope structure --save`), or a
    /// SimGrid time-independent trace index file.
    input: PathBuf,
    /// Platform: SimGrid XML (v4.1) or mpiscope TOML.
    #[arg(long)]
    platform: PathBuf,
    /// Placement, network model, MPI library.
    #[command(flatten)]
    sim: SimArgs,
    /// Speed (flop/s) of the traced machine, to scale mpiscope traces' compute bursts
    /// (default: the simulated host's speed, bursts keep their durations).
    #[arg(long, value_parser = crate::inputs::positive)]
    traced_speed: Option<f64>,
    /// Report callsites per message size (`bytes` in the JSON's callsites).
    #[arg(long)]
    callsites_by_size: bool,
    /// Replay compute bursts for their wall time even when the trace recorded their CPU
    /// time (`mpiscope trace --cpu-time`): as traces recorded before, whose ranks'
    /// waiting for a shared core counts as work. A structural form saved from such a trace
    /// keeps the CPU times only, and refuses it.
    #[arg(long)]
    wall_bursts: bool,
    /// Charge SimGrid's cost of a test (1e-4 s times a counter that grows with each failed
    /// test) whatever the network model: `--cfg smpi/test:1e-4` unless `smpi/test` is set
    /// (`--network smpi` charges it by default).
    #[arg(long)]
    simgrid_test_delays: bool,
    /// Replay a TI trace whose lines are not all valid actions (garbage, unknown actions,
    /// missing fields, lines of another rank): skip them, and say how many and which.
    /// Without it such a line is an error.
    #[arg(long)]
    lenient: bool,
    /// Write the timeline as Chrome trace JSON (Perfetto).
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Replace an existing output file that mpiscope did not write (never a directory, a
    /// symbolic link or a special file).
    #[arg(long)]
    force: bool,
    /// Print the report as JSON (with `events`, the actions replayed, and
    /// `events_per_second`, per wall-clock second of the simulation).
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// Runs `mpiscope replay`.
pub fn replay(a: ReplayArgs) -> Result<i32> {
    if let Some(path) = &a.timeline {
        // Judged before the simulation, so a refused output costs nothing.
        mpiscope_files::check_output(path, &crate::outputs::TIMELINE, a.force)?;
    }
    let platform = crate::simflags::load_platform(&a.platform)?;
    let mut config = a.sim.config(&platform, &a.platform)?;
    config.timeline = a.timeline.is_some();
    let test_set = platform.config.contains_key("smpi/test")
        || a.sim
            .cfg
            .iter()
            .any(|c| c.split(':').next().map(str::trim) == Some("smpi/test"));
    if a.simgrid_test_delays && !test_set {
        config.costs.test = mpiscope_sim::costs::SMPI_POLL_COST;
    }

    // The workload; hosts are placed first: compute bursts scale with the simulated host's
    // speed.
    let kind = InputKind::of(&a.input);
    if a.lenient && kind != InputKind::Ti {
        bail!(
            "--lenient: {} is {}; only TI traces are read leniently",
            a.input.display(),
            kind.describe()
        );
    }
    let skipped = a.lenient.then(ti::SkippedLines::default);
    let options = OpenOptions {
        trace: trace::TraceOptions {
            traced_speed: a.traced_speed,
            callsites_by_size: a.callsites_by_size,
            wall_bursts: a.wall_bursts,
            core_efficiency: config.core_efficiency.clone(),
        },
        ti: ti::TiOptions {
            lenient: skipped.clone(),
        },
    };
    let input = workload::open(&a.input, &options)?;
    let input_state = input.run_dir().map(crate::inputs::announce_input);
    let nranks = input.ranks();
    let hosts = a.sim.placement.place(&platform, nranks)?;
    let mut warnings: Vec<String> = platform.warnings.iter().map(|w| w.to_string()).collect();
    if let Some(w) = a.sim.placement.wrap_warning(&platform, nranks)? {
        eprintln!("mpiscope: warning: {w}");
        warnings.push(w);
    }
    let speeds: Vec<f64> = hosts
        .iter()
        .map(|&h| platform.hosts[h as usize].speed)
        .collect();
    let loaded = input.load(&speeds)?;
    let sim = Simulation::new(&platform, config, hosts.clone(), loaded.workloads)?;
    let started = Instant::now();
    let result = simulate(sim, nranks, !a.quiet && !a.json);
    if let Some(log) = &skipped {
        crate::inputs::report_skipped(log);
    }
    let result = result?;
    let wall = started.elapsed().as_secs_f64();
    let mut report = Report::new(&platform, &result, &hosts, wall);
    if let Some(sites) = &loaded.callsites {
        name_callsites(&mut report, sites, a.callsites_by_size);
    }
    if let Some(path) = &a.timeline {
        let mut w =
            mpiscope_files::AtomicFile::create_output(path, &crate::outputs::TIMELINE, a.force)?;
        write_chrome_trace(&result.timeline, &|_| None, &mut w)
            .with_context(|| format!("cannot write {}", path.display()))?;
        w.commit()?;
    }
    if a.json {
        let mut value = match &input_state {
            Some(i) => crate::inputs::with_input(&report, i)?,
            None => serde_json::to_value(&report)?,
        };
        // The platform's warnings (also said when it was read) and the placement's.
        if let serde_json::Value::Object(m) = &mut value {
            m.insert("warnings".into(), serde_json::to_value(&warnings)?);
        }
        crate::outputs::write_stdout(&crate::outputs::json(&value)?)?;
    } else {
        crate::outputs::write_stdout(&report.to_text())?;
    }
    Ok(0)
}

/// Runs the simulation, with a progress bar of the ranks done when `bar` is set.
fn simulate(sim: Simulation, nranks: u32, bar: bool) -> Result<SimResult> {
    let bar = bar.then(|| {
        let b = indicatif::ProgressBar::new(u64::from(nranks));
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} simulating: {pos}/{len} ranks done, {msg} simulated [{elapsed}]",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let result = sim.run_with_progress(|done, t| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
            b.set_message(format!("{t:.3} s"));
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    Ok(result?)
}

/// Names the report's callsites: their MPI function and message size, and the source
/// location of the first ones (file:line when the binary has debug information).
fn name_callsites(report: &mut Report, sites: &trace::Callsites, by_size: bool) {
    let mut symbolizer = mpiscope_analyze::symbols::Symbolizer::new();
    for c in report.callsites.iter_mut() {
        c.function = sites.function(c.callsite);
        c.bytes = sites.bytes(c.callsite);
    }
    for c in report
        .callsites
        .iter_mut()
        .take(if by_size { 1000 } else { 100 })
    {
        if let Some((path, offset)) = sites.innermost(c.callsite) {
            c.location = Some(match symbolizer.resolve(&path, offset) {
                Some(l) => l.to_string(),
                None => format!("{path}+{offset:#x}"),
            });
        }
    }
}
