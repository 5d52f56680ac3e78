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
use mpiscope_analyze::phase::{Phase, RankRange, Resolved};
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
    /// The part of the run timed: `all` (the makespan), or `loop`: the whole trace is still
    /// replayed (every message keeps its match, and the makespan is unchanged), and the
    /// report adds the simulated dates at which each rank enters its main loop (just before
    /// the first call of its first iteration, found as `report --phase loop` finds it) and
    /// leaves it (just after its last call), and the loop's simulated time, from the first
    /// rank in to the last rank out, beside the traced one (`phase` in the JSON). mpiscope
    /// run directories only.
    #[arg(long, value_name = "PHASE", default_value = "all", value_parser = crate::phaseflags::parse_phase)]
    phase: Phase,
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
    let phase = phase_of(&a, kind)?;
    let marks = (phase.phase == Phase::Loop).then(|| {
        trace::PhaseMarks::new(
            phase
                .ranges
                .iter()
                .map(|r| (r.start_ns, r.window().end))
                .collect(),
        )
    });
    let options = OpenOptions {
        trace: trace::TraceOptions {
            traced_speed: a.traced_speed,
            callsites_by_size: a.callsites_by_size,
            marks: marks.clone(),
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
    let timed = marks.map(|m| LoopTimes::of(&phase, &m.dates()));
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
            if let Some(l) = &timed {
                m.insert("phase".into(), serde_json::to_value(l)?);
            }
        }
        crate::outputs::write_stdout(&crate::outputs::json(&value)?)?;
    } else {
        let mut text = report.to_text();
        if let Some(l) = &timed {
            text += &l.to_text();
        }
        crate::outputs::write_stdout(&text)?;
    }
    Ok(0)
}

/// The phase `--phase` asks for, where it lies on each rank of the run directory replayed.
fn phase_of(a: &ReplayArgs, kind: InputKind) -> Result<Resolved> {
    if a.phase == Phase::All {
        return Ok(Resolved::default());
    }
    if kind != InputKind::RunDir {
        bail!(
            "--phase {}: {} is {}; the main loop is found in mpiscope run directories only",
            a.phase.name(),
            a.input.display(),
            kind.describe()
        );
    }
    let run = crate::inputs::open_run(&a.input)?;
    Ok(mpiscope_analyze::phase::resolve(&run, a.phase)?)
}

/// The main loop in the simulation: per rank, when it entered and left it.
#[derive(Debug, serde::Serialize)]
struct LoopTimes {
    /// `loop`.
    name: &'static str,
    /// From the first rank entering to the last leaving, simulated seconds.
    simulated_s: f64,
    /// The same in the traced run, seconds.
    traced_s: f64,
    /// The first rank's entry and the last rank's exit, simulated seconds.
    start_s: f64,
    end_s: f64,
    /// Per rank.
    ranks: Vec<RankLoop>,
}

#[derive(Debug, serde::Serialize)]
struct RankLoop {
    rank: u32,
    /// Simulated dates, seconds (`null` when the replay did not reach it).
    enter_s: Option<f64>,
    leave_s: Option<f64>,
    /// Where the loop lies in the trace.
    traced: RankRange,
}

impl LoopTimes {
    fn of(phase: &Resolved, dates: &[trace::RankDates]) -> LoopTimes {
        let s = |ps: Option<u64>| ps.map(|p| p as f64 * 1e-12);
        let ranks: Vec<RankLoop> = phase
            .ranges
            .iter()
            .map(|r| {
                let d = dates.get(r.rank as usize).copied().unwrap_or_default();
                RankLoop {
                    rank: r.rank,
                    enter_s: s(d.enter_ps),
                    leave_s: s(d.leave_ps),
                    traced: r.clone(),
                }
            })
            .collect();
        let start = ranks
            .iter()
            .filter_map(|r| r.enter_s)
            .fold(f64::INFINITY, f64::min);
        let end = ranks.iter().filter_map(|r| r.leave_s).fold(0.0, f64::max);
        let t0 = phase.ranges.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let t1 = phase.ranges.iter().map(|r| r.end_ns).max().unwrap_or(0);
        let start = if start.is_finite() { start } else { 0.0 };
        LoopTimes {
            name: "loop",
            simulated_s: (end - start).max(0.0),
            traced_s: t1.saturating_sub(t0) as f64 * 1e-9,
            start_s: start,
            end_s: end,
            ranks,
        }
    }

    fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = format!(
            "main loop: {:.6} s simulated ({:.6} s to {:.6} s, first rank in to last rank out), \
             {:.6} s traced\n",
            self.simulated_s, self.start_s, self.end_s, self.traced_s
        );
        let t = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.6}"));
        for r in &self.ranks {
            let _ = writeln!(
                s,
                "  rank {}: enters at {} s, leaves at {} s (traced: {:.6} s)",
                r.rank,
                t(r.enter_s),
                t(r.leave_s),
                r.traced.end_ns.saturating_sub(r.traced.start_ns) as f64 * 1e-9
            );
        }
        s
    }
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
