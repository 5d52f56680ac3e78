//! `mpiscope hpl`: simulate HPL (from a standard `HPL.dat`) on a modeled platform.
//!
//! The skeleton is `mpiscope-hpl`; this file loads the platform, places the ranks, runs
//! every configuration of the `HPL.dat` and prints HPL's result lines (or JSON).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use mpiscope_hpl::{HplDat, Kernels};
use mpiscope_sim::network::FlowConfig;
use mpiscope_sim::platform::{self, Mapping};
use mpiscope_sim::{NetworkKind, SimConfig, Simulation};

/// Options of `mpiscope hpl`.
#[derive(Args, Debug)]
pub struct HplArgs {
    /// A standard HPL input file (`HPL.dat`).
    dat: PathBuf,
    /// Platform: SimGrid XML (v4.1) or mpiscope TOML (with `mpiscope/dgemm` and
    /// `mpiscope/dtrsm` kernel models in `[config]` when calibrated).
    #[arg(long)]
    platform: PathBuf,
    /// SimGrid-style hostfile; by default rank i runs on host i.
    #[arg(long)]
    hostfile: Option<PathBuf>,
    /// Print a JSON list (one object per configuration).
    #[arg(long)]
    json: bool,
}

/// Runs `mpiscope hpl`.
pub fn hpl(a: HplArgs) -> Result<i32> {
    let text = std::fs::read_to_string(&a.dat)
        .with_context(|| format!("cannot read {}", a.dat.display()))?;
    let dat = HplDat::parse(&text, &a.dat.display().to_string())?;
    let platform = platform::load(&a.platform)
        .with_context(|| format!("cannot load the platform {}", a.platform.display()))?;
    let kernels = Kernels::from_config(&platform.config)
        .map_err(|e| anyhow!("{}: {e}", a.platform.display()))?;
    let eager_threshold = match platform.config.get("smpi/send-is-detached-thresh") {
        Some(v) => v.trim().parse().with_context(|| {
            format!(
                "{}: smpi/send-is-detached-thresh `{v}` is not a byte count",
                a.platform.display()
            )
        })?,
        None => 65536,
    };
    let flow = FlowConfig::from_options(&platform.config)
        .map_err(|e| anyhow!("{}: {e}", a.platform.display()))?;
    let mapping = match &a.hostfile {
        Some(h) => Mapping::Hostfile(platform::Hostfile::from_path(h)?),
        None => Mapping::Sequential { ranks_per_host: 1 },
    };
    let mut out = String::new();
    let mut json = Vec::new();
    if !a.json {
        out += &header();
    }
    let runs = dat.runs();
    for run in &runs {
        let nranks = run.p * run.q;
        let hosts = platform::map_ranks(&platform, nranks, &mapping)
            .with_context(|| format!("cannot place {nranks} ranks"))?;
        let speeds: Vec<f64> = hosts
            .iter()
            .map(|&h| platform.hosts[h as usize].speed)
            .collect();
        let workloads = mpiscope_hpl::workloads(run, kernels, &speeds);
        let config = SimConfig {
            eager_threshold,
            network: NetworkKind::Flow(flow.clone()),
            ..SimConfig::default()
        };
        let sim = Simulation::new(&platform, config, hosts, workloads)?;
        let started = Instant::now();
        let result = sim
            .run()
            .with_context(|| format!("simulating {}", run.code()))?;
        let wall = started.elapsed().as_secs_f64();
        let time = result.makespan_s;
        let gflops = if time > 0.0 {
            run.flops() / time / 1e9
        } else {
            0.0
        };
        if a.json {
            json.push(serde_json::json!({
                "tv": run.code(),
                "n": run.n,
                "nb": run.nb,
                "p": run.p,
                "q": run.q,
                "time_s": time,
                "gflops": gflops,
                "sim_wall_s": wall,
                "messages": result.messages,
            }));
        } else {
            out += &format!(
                "{:<8}{:>12} {:>5} {:>5} {:>5} {:>18.2}    {:>19}\n",
                run.code(),
                run.n,
                run.nb,
                run.p,
                run.q,
                time,
                c_exp(gflops, 4)
            );
        }
    }
    if a.json {
        crate::write_stdout(&(serde_json::to_string_pretty(&json)? + "\n"))?;
    } else {
        out += &summary(runs.len());
        crate::write_stdout(&out)?;
    }
    Ok(0)
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
