//! `mpiscope replay`: simulate a trace on a modeled platform.
//!
//! The input is an mpiscope run directory, a structural form (`mpiscope structure --save`)
//! or a SimGrid time-independent trace index; the platform a SimGrid XML or mpiscope TOML
//! file; ranks are placed by a hostfile or a mapping.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use mpiscope_sim::coll::Selector;
use mpiscope_sim::network::parse_factors;
use mpiscope_sim::platform::{self, Mapping};
use mpiscope_sim::report::{write_chrome_trace, Report};
use mpiscope_sim::workload::{structural, ti, trace, RankWorkload};
use mpiscope_sim::{NetworkKind, SimConfig, Simulation};

/// Options of `mpiscope replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// An mpiscope run directory, a structural form (`mpiscope structure --save`), or a
    /// SimGrid time-independent trace index file.
    input: PathBuf,
    /// Platform: SimGrid XML (v4.1) or mpiscope TOML.
    #[arg(long)]
    platform: PathBuf,
    /// SimGrid-style hostfile (one host per line, `host:N` for N ranks); rank i goes to
    /// entry i modulo the number of entries.
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Rank placement when no hostfile is given: `sequential[:K]` (K ranks per host, filling
    /// hosts in order), `round-robin` (rank i on host i mod hosts), `random[:SEED[:K]]`
    /// (hosts in a seeded random order, K ranks each).
    #[arg(long, default_value = "sequential")]
    mapping: String,
    /// `core`: each rank bound to one core of its host, the k-th rank of a host to core k
    /// modulo its cores (as `mpirun --bind-to core --map-by core`); `none`: a host's ranks
    /// share all its cores.
    #[arg(long, default_value = "none", value_parser = ["none", "core"])]
    bind_to: String,
    /// Network model: `flow` (max-min sharing, SimGrid's CM02), `smpi` (the same with
    /// SMPI's piecewise factors by message size and weight-S, smpirun's default model) or
    /// `loggp`.
    #[arg(long, default_value = "flow")]
    network: String,
    /// Latency factors by message size, in SimGrid's `smpi/lat-factor` syntax
    /// (`65472:11.6;15424:3.5;0:2.0`: a message larger than a threshold takes its factor).
    #[arg(long, value_name = "SPEC")]
    lat_factor: Option<String>,
    /// Bandwidth factors by message size (SimGrid's `smpi/bw-factor` syntax).
    #[arg(long, value_name = "SPEC")]
    bw_factor: Option<String>,
    /// SimGrid's `network/weight-S` (penalty per link of `weight-S / bandwidth`).
    #[arg(long, value_name = "BYTES", value_parser = crate::inputs::non_negative)]
    weight_s: Option<f64>,
    /// LogGP parameters `o,g` in seconds (with `--network loggp`; L and G come from the
    /// platform's routes).
    #[arg(long, value_name = "O,G")]
    loggp: Option<String>,
    /// Collective decision rules: `ompi` or `mpich`.
    #[arg(long, default_value = "ompi")]
    collectives: String,
    /// Force an algorithm: `bcast=binomial` (repeatable).
    #[arg(long = "algorithm", value_name = "COLL=NAME")]
    algorithms: Vec<String>,
    /// Sends below this many bytes return at once (eager protocol; default: the platform
    /// file's `smpi/send-is-detached-thresh`, else 65536 as in SMPI).
    #[arg(long)]
    eager_threshold: Option<u64>,
    /// Speed (flop/s) of the traced machine, to scale mpiscope traces' compute bursts
    /// (default: the simulated host's speed, bursts keep their durations).
    #[arg(long, value_parser = crate::inputs::positive)]
    traced_speed: Option<f64>,
    /// Report callsites per message size (`bytes` in the JSON's callsites).
    #[arg(long)]
    callsites_by_size: bool,
    /// Reproduce SimGrid's `test` delays when replaying TI traces.
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
    /// Print the report as JSON.
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
    let platform = platform::load(&a.platform)
        .with_context(|| format!("cannot load the platform {}", a.platform.display()))?;
    crate::inputs::warn_about_platform(&platform);
    // Options carried by the platform file (SimGrid's names), then ours on top.
    if !mpiscope_sim::options::NETWORK_MODELS.contains(&a.network.as_str()) {
        bail!("--network {}: expected flow, smpi or loggp", a.network);
    }
    let mut config = SimConfig::for_platform(&platform, &a.network)
        .map_err(|e| anyhow!("{}: {e}", a.platform.display()))?;
    if let Some(t) = a.eager_threshold {
        config.eager_threshold = t;
    }
    config.timeline = a.timeline.is_some();
    config.bind_to_core = a.bind_to == "core";
    config.selector = match a.collectives.as_str() {
        "ompi" | "openmpi" => Selector::Ompi,
        "mpich" => Selector::Mpich,
        other => bail!("--collectives {other}: expected ompi or mpich"),
    };
    let model_flags = |flags: &[(&str, bool)], model: &str| -> Result<()> {
        match flags.iter().find(|(_, given)| *given) {
            Some((flag, _)) => bail!("{flag} applies to --network {model}, not {}", a.network),
            None => Ok(()),
        }
    };
    match &mut config.network {
        NetworkKind::Flow(flow) => {
            model_flags(&[("--loggp", a.loggp.is_some())], "loggp")?;
            if let Some(spec) = &a.lat_factor {
                flow.lat_factors =
                    parse_factors(spec).map_err(|e| anyhow!("--lat-factor {spec}: {e}"))?;
            }
            if let Some(spec) = &a.bw_factor {
                flow.bw_factors =
                    parse_factors(spec).map_err(|e| anyhow!("--bw-factor {spec}: {e}"))?;
            }
            if let Some(w) = a.weight_s {
                flow.weight_s = w;
            }
        }
        NetworkKind::LogGp(p) => {
            model_flags(
                &[
                    ("--lat-factor", a.lat_factor.is_some()),
                    ("--bw-factor", a.bw_factor.is_some()),
                    ("--weight-s", a.weight_s.is_some()),
                ],
                "flow or smpi",
            )?;
            if let Some(s) = &a.loggp {
                let v: Vec<f64> = s
                    .split(',')
                    .map(|x| x.trim().parse::<f64>())
                    .collect::<Result<_, _>>()
                    .ok()
                    .filter(|v: &Vec<f64>| {
                        v.len() == 2 && v.iter().all(|x| x.is_finite() && *x >= 0.0)
                    })
                    .with_context(|| {
                        format!("--loggp {s}: expected O,G, two non-negative numbers of seconds")
                    })?;
                p.o = v[0];
                p.g = v[1];
            }
        }
    }
    let mut forced = HashMap::new();
    for f in &a.algorithms {
        let (kind, name) =
            mpiscope_sim::coll::parse_forced(f).map_err(|e| anyhow!("--algorithm {f}: {e}"))?;
        forced.insert(kind, name.to_owned());
    }
    config.forced = forced;

    // The workload.
    let input = &a.input;
    let is_run = input.is_dir();
    let host_speeds: Vec<f64> = platform.hosts.iter().map(|h| h.speed).collect();
    let mut callsites = None;
    // Hosts are placed first: compute bursts scale with the simulated host's speed.
    let speeds_of = |n: u32| -> Result<Vec<f64>> {
        let hosts = place(&platform, n, &a)?;
        Ok(hosts.iter().map(|&h| host_speeds[h as usize]).collect())
    };
    let options = trace::TraceOptions {
        traced_speed: a.traced_speed,
        callsites_by_size: a.callsites_by_size,
    };
    let mut input_state = None;
    let skipped = a.lenient.then(ti::SkippedLines::default);
    let (workloads, nranks): (Vec<Box<dyn RankWorkload>>, u32) = if is_run {
        if a.lenient {
            bail!(
                "--lenient: {} is a run directory; only TI traces are read leniently",
                input.display()
            );
        }
        let run = mpiscope_trace::RunDir::open(input)
            .with_context(|| format!("cannot open the trace {}", input.display()))?;
        input_state = Some(crate::announce_input(&run));
        let n = run.ranks();
        let (w, sites) = trace::load_with_callsites(&run, options, &speeds_of(n)?)?;
        callsites = Some(sites);
        (w, n)
    } else if structural::sniff(input) {
        if a.lenient {
            bail!(
                "--lenient: {} is a structural form; only TI traces are read leniently",
                input.display()
            );
        }
        let form = structural::read_file(input)?;
        let n = form.ranks.len() as u32;
        let (w, sites) = structural::load(&form, options, &speeds_of(n)?)?;
        callsites = Some(sites);
        (w, n)
    } else {
        let w = ti::load(
            input,
            ti::TiOptions {
                simgrid_test_delays: a.simgrid_test_delays,
                lenient: skipped.clone(),
            },
        )?;
        let n = w.len() as u32;
        (w, n)
    };
    let hosts = place(&platform, nranks, &a)?;
    let sim = Simulation::new(&platform, config, hosts.clone(), workloads)?;
    let started = Instant::now();
    let bar = (!a.quiet && !a.json).then(|| {
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
    if let Some(log) = &skipped {
        crate::inputs::report_skipped(log);
    }
    let result = result?;
    let wall = started.elapsed().as_secs_f64();
    let mut report = Report::new(&platform, &result, &hosts, wall);
    if let Some(sites) = &callsites {
        // Name the callsites: file:line when the binary has debug information.
        let mut symbolizer = mpiscope_analyze::symbols::Symbolizer::new();
        for c in report.callsites.iter_mut() {
            c.function = sites.function(c.callsite);
            c.bytes = sites.bytes(c.callsite);
        }
        for c in report
            .callsites
            .iter_mut()
            .take(if a.callsites_by_size { 1000 } else { 100 })
        {
            if let Some((path, offset)) = sites.innermost(c.callsite) {
                c.location = Some(match symbolizer.resolve(&path, offset) {
                    Some(l) => l.to_string(),
                    None => format!("{path}+{offset:#x}"),
                });
            }
        }
    }
    if let Some(path) = &a.timeline {
        let mut w =
            mpiscope_files::AtomicFile::create_output(path, &crate::outputs::TIMELINE, a.force)?;
        write_chrome_trace(&result.timeline, &|_| None, &mut w)
            .with_context(|| format!("cannot write {}", path.display()))?;
        w.commit()?;
    }
    if a.json {
        let value = match &input_state {
            Some(i) => crate::with_input(&report, i)?,
            None => serde_json::to_value(&report)?,
        };
        crate::write_stdout(&(serde_json::to_string_pretty(&value)? + "\n"))?;
    } else {
        crate::write_stdout(&report.to_text())?;
    }
    Ok(0)
}

fn place(platform: &mpiscope_sim::platform::Platform, n: u32, a: &ReplayArgs) -> Result<Vec<u32>> {
    let mapping = match &a.hostfile {
        Some(h) => Mapping::Hostfile(platform::Hostfile::from_path(h)?),
        None => a
            .mapping
            .parse::<Mapping>()
            .map_err(|e| anyhow!("--mapping: {e}"))?,
    };
    platform::map_ranks(platform, n, &mapping).with_context(|| format!("cannot place {n} ranks"))
}
