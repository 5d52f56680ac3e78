//! `mpiscope overlap`: run an unmodified MPI program with T-NBC (transparent non-blocking
//! MPI_Alltoall, MPI_Alltoallv and MPI_Bcast, `libmpiscope_overlap_<flavour>.so`), trace the
//! order in which it reads what it receives, measure overlap, and predict the gain from a
//! trace.
//!
//! * `mpiscope overlap -- mpirun -np 4 ./app`: runs with T-NBC (`--order FILE` adds the
//!   access-order priorities, `--stats` prints per-rank counts).
//! * `mpiscope overlap --trace-access -o DIR -- mpirun ...`: runs with the collectives
//!   blocking, records each rank's first touches of the received sub-messages into
//!   `DIR/access-<rank>.jsonl`, and writes the consensus order per call site to
//!   `DIR/order.json`.
//! * `mpiscope overlap bench`: the overlap micro-benchmark ([Li 2010], Table 1).
//! * `mpiscope overlap predict RUN`: what T-NBC would hide, from an mpiscope trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use mpiscope_overlap_core::access::{self, Record};
use mpiscope_overlap_core::model;

use crate::launch;

/// Options of `mpiscope overlap`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct OverlapArgs {
    #[command(subcommand)]
    command: Option<OverlapCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum OverlapCommand {
    /// Overlap micro-benchmark: MPI_Alltoall followed by computation, [Li 2010]'s five
    /// scenarios, blocking vs T-NBC vs MPI_Ialltoall + MPI_Wait.
    Bench(BenchArgs),
    /// Predict what T-NBC would hide for a traced run (`mpiscope trace` directory).
    Predict(PredictArgs),
}

/// Running a program with T-NBC.
#[derive(Args, Debug)]
struct RunArgs {
    /// Record the order in which the program first reads each received sub-message (the
    /// collectives stay blocking), into `-o DIR`.
    #[arg(long)]
    trace_access: bool,
    /// Directory of the access trace.
    #[arg(short, long, default_value = "mpiscope-access")]
    output: PathBuf,
    /// Replace an `order.json` in `-o DIR` that mpiscope did not write (never a directory,
    /// a symbolic link or a special file).
    #[arg(long)]
    force: bool,
    /// Access orders to give priorities by (`order.json` of a `--trace-access` run).
    #[arg(long, value_name = "FILE")]
    order: Option<PathBuf>,
    /// Smallest receive buffer overlapped, bytes (the library's default: the break-even
    /// measured on shared memory, docs/BENCHMARKS.md).
    #[arg(long, value_name = "BYTES", default_value_t = mpiscope_overlap_core::DEFAULT_MIN_BYTES)]
    min_bytes: u64,
    /// Print, per rank at MPI_Finalize, the collectives overlapped, the faults handled and
    /// what returning from a call cost (microseconds per call, by phase).
    #[arg(long)]
    stats: bool,
    /// How pages of buffers still in flight are guarded: `userfaultfd` (the kernel makes
    /// every access wait, system calls included), `mprotect` (page protection and a SIGSEGV
    /// handler; a system call on such a page fails unless the library intercepted it), or
    /// `auto` (userfaultfd when the kernel grants it). `--stats` says which one ran.
    #[arg(long, default_value = "auto", value_parser = ["auto", "userfaultfd", "mprotect"])]
    guard: String,
    /// Which eligible calls overlap: `adaptive` (per call site, only where the program's own
    /// iterations measured faster overlapped than blocking, reviewed as the run goes on) or
    /// `always`. `--stats` prints each site's decision.
    #[arg(long, default_value = "adaptive", value_parser = ["adaptive", "always"])]
    policy: String,
    /// The adaptive policy's starting estimate of what overlapping a call costs, in
    /// microseconds: a fixed part and a part per MiB sent and received (`FIXED[,PER_MIB]`;
    /// default 30,50, of the order measured on shared memory). A site probes only where the
    /// program's computation around its collective could hide more than this; its probe
    /// then measures the real cost. `--stats` prints each site's predicted gain.
    #[arg(long, value_name = "FIXED[,PER_MIB]", value_parser = parse_cost)]
    cost: Option<(f64, f64)>,
    /// With `--order`: which ranks share a node (and its network), when host names do not
    /// tell: world ranks grouped by N. Only one rank per node sends at a time, the one whose
    /// data is read first ([Li 2010], section 5.2.2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    ranks_per_node: Option<u32>,
    /// MPI flavour of the program.
    #[arg(long, default_value = "auto", value_parser = ["auto", "openmpi", "mpich"])]
    flavour: String,
    /// Use this T-NBC library instead of the one found next to mpiscope.
    #[arg(long, value_name = "SO")]
    preload: Option<PathBuf>,
    /// The command: a launcher and its arguments (`mpirun -np 4 ./app`), or a program.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `--cost FIXED[,PER_MIB]`: two non-negative microsecond figures.
fn parse_cost(s: &str) -> Result<(f64, f64), String> {
    mpiscope_overlap_core::model::parse_cost_us(s).ok_or_else(|| {
        format!("expected FIXED[,PER_MIB] in microseconds, two non-negative numbers, got {s:?}")
    })
}

/// Options of `mpiscope overlap bench`.
#[derive(Args, Debug)]
struct BenchArgs {
    /// Bytes per peer.
    #[arg(long, default_value_t = 1 << 20)]
    bytes: u64,
    /// Ranks (`-np N` as mpirun spells it, or `--np N`, is the same).
    #[arg(short = 'n', long, visible_alias = "np", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..))]
    ranks: u32,
    /// Repetitions per measurement (medians are reported).
    #[arg(long, default_value_t = 20)]
    reps: u32,
    /// Computation: sleep (no CPU contention with the progress thread) or spin.
    #[arg(long, default_value = "sleep", value_parser = ["sleep", "spin"])]
    kind: String,
    /// Scenarios to run, among a b c d e ([Li 2010], Table 1).
    #[arg(long, default_value = "abcde")]
    scenarios: String,
    /// MPI of the benchmark program.
    #[arg(long, default_value = "openmpi", value_parser = ["openmpi", "mpich"])]
    flavour: String,
    /// Use this T-NBC library instead of the one found next to mpiscope.
    #[arg(long, value_name = "SO")]
    preload: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Options of `mpiscope overlap predict`.
#[derive(Args, Debug)]
struct PredictArgs {
    /// An mpiscope run directory.
    run: PathBuf,
    /// Fixed cost of starting an overlapped call, microseconds.
    #[arg(long, default_value_t = 60.0)]
    init_us: f64,
    /// Cost of starting an overlapped call per MiB received, microseconds.
    #[arg(long, default_value_t = 50.0)]
    init_us_per_mib: f64,
    /// T-NBC's collective time over the traced collective's (`mpiscope overlap bench`: T-NBC
    /// pure over blocking pure; about 2.5 on shared memory here).
    #[arg(long, default_value_t = 1.0)]
    slowdown: f64,
    /// Smallest call overlapped, bytes received (by default the library's threshold, as
    /// `mpiscope overlap --min-bytes`).
    #[arg(long, default_value_t = mpiscope_overlap_core::DEFAULT_MIN_BYTES)]
    min_bytes: u64,
    /// The output directory of `mpiscope overlap --trace-access` for the same program and
    /// inputs: only the computation before each call's data is first read then counts as
    /// hiding it (T-NBC's interiors arrive in one piece).
    #[arg(long, value_name = "DIR")]
    access: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// `mpiscope overlap bench -np N`: mpirun's spelling of `--ranks N` (clap reads `-np` as
/// `-n p`), rewritten before parsing; only there, and never after `--` (the program's own
/// arguments).
pub fn spell_np(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let is = |i: usize, w: &str| args.get(i).is_some_and(|a| a == w);
    if is(1, "overlap") && is(2, "bench") {
        for a in args.iter_mut().skip(3) {
            if a == "--" {
                break;
            }
            if a == "-np" {
                *a = "--ranks".into();
            }
        }
    }
    args
}

/// Runs `mpiscope overlap`.
pub fn overlap(a: OverlapArgs) -> Result<i32> {
    match a.command {
        Some(OverlapCommand::Bench(b)) => bench(b),
        Some(OverlapCommand::Predict(p)) => predict(p),
        None => run(a.run),
    }
}

fn run(a: RunArgs) -> Result<i32> {
    let cmd = &a.command;
    if cmd.is_empty() {
        // A usage error (2), as clap's own.
        use clap::CommandFactory;
        crate::Cli::command()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "no command: `mpiscope overlap [OPTIONS] -- mpirun -np 4 ./app` (or \
                 `mpiscope overlap bench`, `mpiscope overlap predict RUN`)",
            )
            .exit();
    }
    // Bad options are reported before anything runs.
    let order = match &a.order {
        Some(o) => {
            let text = std::fs::read_to_string(o)
                .with_context(|| format!("--order {}: cannot read", o.display()))?;
            access::parse_orders(&text)
                .map_err(|e| anyhow::anyhow!("--order {}: {e}", o.display()))?;
            Some(std::fs::canonicalize(o)?)
        }
        None => None,
    };
    let target = launch::resolve(cmd, &a.flavour)?;
    let lib = launch::find_library("mpiscope_overlap", target.flavour, a.preload.as_ref())?;
    let mut env = vec![("LD_PRELOAD".to_string(), lib.display().to_string())];
    if let Some(o) = order {
        env.push(("MPISCOPE_OVERLAP_ORDER".into(), o.display().to_string()));
    }
    if a.min_bytes != mpiscope_overlap_core::DEFAULT_MIN_BYTES {
        env.push(("MPISCOPE_OVERLAP_MIN_BYTES".into(), a.min_bytes.to_string()));
    }
    if a.stats {
        env.push(("MPISCOPE_OVERLAP_STATS".into(), "1".into()));
    }
    if a.policy != "adaptive" {
        env.push(("MPISCOPE_OVERLAP_POLICY".into(), a.policy.clone()));
    }
    if let Some((fixed, per_mib)) = a.cost {
        env.push((
            "MPISCOPE_OVERLAP_COST_US".into(),
            format!("{fixed},{per_mib}"),
        ));
    }
    if a.guard != "auto" {
        env.push(("MPISCOPE_OVERLAP_GUARD".into(), a.guard.clone()));
    }
    if let Some(n) = a.ranks_per_node {
        env.push(("MPISCOPE_OVERLAP_RANKS_PER_NODE".into(), n.to_string()));
    }
    let out = if a.trace_access {
        std::fs::create_dir_all(&a.output)
            .with_context(|| format!("cannot create {}", a.output.display()))?;
        let out = std::fs::canonicalize(&a.output)?;
        mpiscope_files::check_output(
            &out.join("order.json"),
            &crate::outputs::ACCESS_ORDERS,
            a.force,
        )?;
        // An earlier run's records would mix with this one's: they go, and only they (a
        // file of that name that is not an access trace is kept, unless --force).
        for e in std::fs::read_dir(&out)?.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("access-") && n.ends_with(".jsonl") {
                let p = e.path();
                mpiscope_files::check_output(&p, &crate::outputs::ACCESS_RECORDS, a.force)?;
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
        env.push(("MPISCOPE_OVERLAP_ACCESS".into(), out.display().to_string()));
        Some(out)
    } else {
        None
    };
    let code = launch::spawn(cmd, &target, &env)?;
    if let Some(out) = out {
        let records = read_access(&out)?;
        if records.is_empty() {
            eprintln!(
                "mpiscope: no access trace in {} (no MPI_Alltoall, MPI_Alltoallv or MPI_Bcast with a contiguous datatype, or the program did not reach MPI_Finalize)",
                out.display()
            );
        } else {
            let orders = access::orders(&records);
            let path = out.join("order.json");
            let text = serde_json::to_string_pretty(&orders)? + "\n";
            crate::outputs::write(
                &path,
                &crate::outputs::ACCESS_ORDERS,
                a.force,
                text.as_bytes(),
            )?;
            print!("{}", orders_text(&orders));
            eprintln!("mpiscope: access orders written to {}", path.display());
        }
    }
    Ok(code)
}

/// Every rank's access records in `dir`.
pub fn read_access(dir: &Path) -> Result<Vec<Record>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with("access-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    let mut all = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("cannot read {}", f.display()))?;
        let recs =
            Record::parse_lines(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        all.extend(recs);
    }
    Ok(all)
}

fn orders_text(orders: &std::collections::BTreeMap<String, access::SiteOrder>) -> String {
    let mut out = format!(
        "{:<28} {:<10} {:>5} {:>6} {:>9}  {}\n",
        "call site",
        "function",
        "subs",
        "calls",
        "agreement",
        "first-read order (mean first touch, us)"
    );
    for (site, o) in orders {
        let shown: Vec<String> = o
            .order
            .iter()
            .take(12)
            .map(
                |&i| match o.mean_first_touch_ns.get(i as usize).copied().flatten() {
                    Some(t) => format!("{i} ({:.0})", t / 1e3),
                    None => format!("{i} (-)"),
                },
            )
            .collect();
        out += &format!(
            "{:<28} {:<10} {:>5} {:>6} {:>8.0}%  {}{}\n",
            site,
            o.kind,
            o.subs,
            o.calls,
            o.agreement * 100.0,
            shown.join(", "),
            if o.order.len() > 12 { ", ..." } else { "" }
        );
    }
    out
}

fn predict(p: PredictArgs) -> Result<i32> {
    let run = crate::inputs::open_run(&p.run)?;
    let init = mpiscope_analyze::overlap::InitModel {
        base_ns: p.init_us * 1e3,
        ns_per_mib: p.init_us_per_mib * 1e3,
        slowdown: p.slowdown,
    };
    if !(p.slowdown > 0.0 && p.slowdown.is_finite()) {
        bail!("--slowdown {}: expected a positive factor", p.slowdown);
    }
    let reads = match &p.access {
        Some(dir) => {
            let records =
                read_access(dir).with_context(|| format!("--access {}", dir.display()))?;
            if records.is_empty() {
                bail!(
                    "--access {}: no access records (access-<rank>.jsonl of `mpiscope overlap \
                     --trace-access`)",
                    dir.display()
                );
            }
            Some(mpiscope_analyze::overlap::FirstReads::from_records(
                &records,
            ))
        }
        None => None,
    };
    let pred = mpiscope_analyze::overlap::predict(&run, init, p.min_bytes, reads.as_ref())
        .with_context(|| match &p.access {
            Some(dir) => format!("{} with --access {}", p.run.display(), dir.display()),
            None => p.run.display().to_string(),
        })?;
    if p.json {
        crate::outputs::write_stdout(&crate::outputs::json(&pred)?)?;
    } else {
        crate::outputs::write_stdout(&pred.to_text())?;
    }
    Ok(0)
}

/// The benchmark program, compiled on demand with the flavour's `mpicc`.
const BENCH_SOURCE: &str = include_str!("../../../bench/overlap_alltoall.c");

/// One measured line of the benchmark.
#[derive(Debug, Clone, serde::Serialize)]
struct BenchRow {
    scenario: char,
    variant: &'static str,
    curc_us: f64,
    crc_us: f64,
    pure_us: f64,
    cpu_us: f64,
    ovrl_us: f64,
    init_us: f64,
    overlap_osu_pct: f64,
    overlap_imb_pct: f64,
    hidden_us: f64,
    model_us: f64,
    data_ok: bool,
}

fn tool(names: &[&str]) -> Result<String> {
    for n in names {
        if Command::new("sh")
            .args(["-c", &format!("command -v {n}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok((*n).to_string());
        }
    }
    bail!(
        "none of {} found (install the MPI's development package)",
        names.join(", ")
    )
}

/// Writes the benchmark program and compiles it with `cc` into a temporary directory
/// (removed when the returned handle is dropped); returns the handle and the executable.
fn compile_bench(cc: &str) -> Result<(tempfile::TempDir, std::path::PathBuf)> {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join("overlap_alltoall.c");
    let exe = dir.path().join("overlap_alltoall");
    std::fs::write(&src, BENCH_SOURCE)?;
    let st = Command::new(cc)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .with_context(|| format!("cannot run {cc}"))?;
    if !st.success() {
        bail!("{cc} failed on the benchmark program");
    }
    Ok((dir, exe))
}

/// The value after `key` in a line of the benchmark's output (NaN if absent).
fn field(line: &str, key: &str) -> f64 {
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == key {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        }
    }
    f64::NAN
}

/// Prints the rows as JSON or as a table.
fn print_bench(b: &BenchArgs, t: f64, rows: &[BenchRow]) -> Result<()> {
    if b.json {
        println!("{}", serde_json::to_string_pretty(rows)?);
    } else {
        println!(
            "T-NBC collective alone: {t:.0} us; {} ranks, {} bytes per peer, {} repetitions, {} (times in us, medians of the slowest rank)\n",
            b.ranks, b.bytes, b.reps, b.kind
        );
        println!("| scenario | variant | CURC | CRC | pure | cpu | ovrl | init | OSU overlap | IMB overlap | hidden | model | data |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for r in rows {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}% | {:.1}% | {:.0} | {:.0} | {} |",
                r.scenario, r.variant, r.curc_us, r.crc_us, r.pure_us, r.cpu_us, r.ovrl_us,
                r.init_us, r.overlap_osu_pct, r.overlap_imb_pct, r.hidden_us, r.model_us,
                if r.data_ok { "ok" } else { "WRONG" }
            );
        }
    }
    Ok(())
}

/// Runs `mpiscope overlap bench`.
fn bench(b: BenchArgs) -> Result<i32> {
    // --flavour and --kind are closed lists clap checked.
    let (cc, run) = if b.flavour == "mpich" {
        (
            tool(&["mpicc.mpich"])?,
            tool(&["mpirun.mpich", "mpiexec.mpich"])?,
        )
    } else {
        (
            tool(&["mpicc.openmpi", "mpicc"])?,
            tool(&["mpirun.openmpi", "mpirun"])?,
        )
    };
    if let Some(c) = b.scenarios.chars().find(|c| !"abcde".contains(*c)) {
        bail!(
            "--scenarios {}: unknown scenario {c} (a, b, c, d, e)",
            b.scenarios
        );
    }
    let lib = launch::find_library("mpiscope_overlap", &b.flavour, b.preload.as_ref())?;
    let (_dir, exe) = compile_bench(&cc)?;
    let root = unsafe { libc::geteuid() } == 0;
    let measure = |variant: &str, curc: f64, crc: f64| -> Result<String> {
        let mut c = Command::new(&run);
        if b.flavour == "openmpi" {
            if root {
                c.arg("--allow-run-as-root");
            }
            c.args(["--oversubscribe", "--mca", "btl", "self,vader"]);
            c.args(["--mca", "mpi_yield_when_idle", "1"]);
            if variant == "t-nbc" {
                c.arg("-x").arg(format!("LD_PRELOAD={}", lib.display()));
                // The mechanism itself, every call overlapped (not the per-site decision).
                c.args(["-x", "MPISCOPE_OVERLAP_POLICY=always"]);
            }
        } else if variant == "t-nbc" {
            c.arg("-genv").arg("LD_PRELOAD").arg(&lib);
            c.args(["-genv", "MPISCOPE_OVERLAP_POLICY", "always"]);
        }
        c.arg("-np").arg(b.ranks.to_string()).arg(&exe);
        c.arg(if variant == "ialltoall" {
            "ialltoall"
        } else {
            "blocking"
        });
        c.arg(b.bytes.to_string()).arg(b.reps.to_string());
        c.arg(format!("{curc:.0}"))
            .arg(format!("{crc:.0}"))
            .arg(&b.kind);
        let o = c.output().with_context(|| format!("cannot run {run}"))?;
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if !text.contains("pure_us") {
            bail!(
                "benchmark run failed ({variant}): {}{}",
                text,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(text)
    };
    // T: the T-NBC collective alone; the scenarios scale with it ([Li 2010]'s ratios).
    let t = field(&measure("t-nbc", 0.0, 0.0)?, "pure_us");
    let mut rows = Vec::new();
    for s in b.scenarios.chars() {
        let (curc, crc) = match s {
            'a' => (1.66 * t, 0.0),
            'b' => (0.0, 1.3 * t),
            'c' => (0.0, 0.65 * t),
            'd' => (0.66 * t, 1.3 * t),
            _ => (0.66 * t, 0.65 * t),
        };
        let (curc, crc) = (curc.round(), crc.round());
        for variant in ["blocking", "t-nbc", "ialltoall"] {
            let line = measure(variant, curc, crc)?;
            let (pure, cpu, ovrl, init) = (
                field(&line, "pure_us"),
                field(&line, "cpu_us"),
                field(&line, "ovrl_us"),
                field(&line, "init_us"),
            );
            rows.push(BenchRow {
                scenario: s,
                variant,
                curc_us: curc,
                crc_us: crc,
                pure_us: pure,
                cpu_us: cpu,
                ovrl_us: ovrl,
                init_us: init,
                overlap_osu_pct: model::osu_percent(pure, cpu, ovrl),
                overlap_imb_pct: model::imb_percent(pure, cpu, ovrl),
                hidden_us: pure + cpu - ovrl,
                model_us: if variant != "t-nbc" {
                    0.0
                } else {
                    model::hidden(pure, init, curc, crc)
                },
                data_ok: line.contains("data ok"),
            });
        }
    }
    print_bench(&b, t, &rows)?;
    Ok(if rows.iter().all(|r| r.data_ok) { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    /// `--cost`'s help states the library's default estimate: the two must not drift.
    #[test]
    fn the_cost_help_states_the_library_default() {
        use clap::CommandFactory;
        let mut cmd = crate::Cli::command();
        let overlap = cmd.find_subcommand_mut("overlap").expect("overlap");
        let cost = overlap
            .get_arguments()
            .find(|a| a.get_id() == "cost")
            .expect("--cost");
        let help = cost.get_help().expect("a help text").to_string();
        let (fixed, per_mib) = mpiscope_overlap_core::model::DEFAULT_COST_US;
        assert!(
            help.contains(&format!("default {fixed},{per_mib}")),
            "{help}"
        );
    }
}
