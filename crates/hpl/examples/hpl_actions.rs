//! Lines up, for one rank, the HPL skeleton's actions with those of the real HPL recorded
//! as a SimGrid time-independent trace (`smpirun -trace-ti` of HPL built with
//! `HPL_NO_MPI_DATATYPE`, so that every message's size is in the trace): both are simulated
//! on the same platform and options, and each action the rank's workload hands the engine
//! is counted on the way.
//!
//! ```text
//! cargo run --release -p mpiscope-hpl --example hpl_actions -- \
//!     HPL.dat PLATFORM TI_INDEX RANK [KEY:VALUE ...]
//! ```
//!
//! `PLATFORM` carries the kernel models (`mpiscope/dgemm`, ...) and is read under
//! `--network smpi`; `KEY:VALUE` are options over its `[config]`, as `--cfg`. Ranks are
//! placed on hosts in order (rank i on host i). Printed for the rank, skeleton beside
//! trace (the skeleton with `--pivots messages --polls chunks`, HPL's own exchanges and
//! probes): messages per (direction, peer, bytes), probes, tests and waits, the computation
//! (total, pieces between MPI calls and their sizes) and the simulated seconds spent per
//! kind of call; and both simulated end dates.
//!
//! A TI trace has no probes: HPL's `MPI_Iprobe` calls are not written, and the replay
//! charges none, so compare with a run whose probes are free (`smpi/iprobe:0`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use mpiscope_hpl::{HplDat, Kernels};
use mpiscope_sim::platform::{self, Mapping, Platform};
use mpiscope_sim::workload::{self, Action, OpenOptions, Outcome, RankWorkload, WorkloadError};
use mpiscope_sim::{SimConfig, Simulation};

/// What one rank did, counted from its actions.
#[derive(Debug, Default)]
struct Tally {
    /// (direction, peer, bytes) -> messages, whatever the call (`send`, `recv`).
    messages: BTreeMap<(&'static str, i64, u64), u64>,
    /// Point-to-point calls by kind (`send`, `isend`, `recv`, `irecv`, `sendrecv`).
    calls: BTreeMap<&'static str, u64>,
    probes: u64,
    tests: u64,
    waits: u64,
    /// Flops of all computations.
    flops: f64,
    /// Flops of each stretch of computation between two MPI calls.
    pieces: Vec<f64>,
    /// The stretch in progress.
    current: f64,
    /// A `ComputeWhilePolling` waiting for its outcome: flops per chunk.
    polling: Option<f64>,
    /// Flops between the first and the last message of the factorization (tags below
    /// [`COLL_TAG`]): HPL's timed part, without the matrix generation and the check.
    timed: f64,
    /// Flops since the last message of the factorization (`None` before the first one).
    since_message: Option<f64>,
}

/// HPL's first tag of its own collectives (HPL_broadcast, HPL_reduce: the barrier before
/// the timed part and the checks after it); the factorization's tags are below.
const COLL_TAG: i64 = 9001;

impl Tally {
    fn compute(&mut self, flops: f64) {
        self.flops += flops;
        self.current += flops;
        if let Some(f) = &mut self.since_message {
            *f += flops;
        }
    }

    /// A message with `tag`: the computation since the last one is in the timed part if
    /// it is the factorization's.
    fn tagged(&mut self, tag: i64) {
        if tag < COLL_TAG {
            self.timed += self.since_message.replace(0.0).unwrap_or(0.0);
        }
    }

    fn call(&mut self) {
        if self.current > 0.0 {
            self.pieces.push(self.current);
        }
        self.current = 0.0;
    }

    fn message(&mut self, dir: &'static str, peer: i64, bytes: u64) {
        *self.messages.entry((dir, peer, bytes)).or_default() += 1;
    }

    fn outcome(&mut self, last: &Outcome) {
        if let (Some(flops), Outcome::Polled { chunks, .. }) = (self.polling.take(), last) {
            for _ in 0..*chunks {
                self.compute(flops);
                self.probes += 1;
                self.call();
            }
        }
    }

    fn action(&mut self, a: &Action) {
        match a {
            Action::Compute { flops } => self.compute(*flops),
            Action::ComputeWhilePolling { flops, .. } => self.polling = Some(*flops),
            Action::Sleep { .. }
            | Action::Pack { .. }
            | Action::Callsite(_)
            | Action::Clock
            | Action::DefineComm { .. } => {}
            Action::Send {
                dst,
                bytes,
                req,
                tag,
                ..
            } => {
                self.call();
                self.tagged(*tag);
                self.message("send", i64::from(*dst), *bytes);
                *self
                    .calls
                    .entry(if req.is_some() { "isend" } else { "send" })
                    .or_default() += 1;
            }
            Action::Recv {
                src,
                bytes,
                req,
                tag,
                ..
            } => {
                self.call();
                self.tagged(*tag);
                self.message("recv", *src, *bytes);
                *self
                    .calls
                    .entry(if req.is_some() { "irecv" } else { "recv" })
                    .or_default() += 1;
            }
            Action::Sendrecv {
                dst,
                send_bytes,
                src,
                recv_bytes,
                tag,
                ..
            } => {
                self.call();
                self.tagged(*tag);
                self.message("send", i64::from(*dst), *send_bytes);
                self.message("recv", *src, *recv_bytes);
                *self.calls.entry("sendrecv").or_default() += 1;
            }
            Action::Wait { .. } => {
                self.call();
                self.waits += 1;
            }
            Action::Test { .. } => {
                self.call();
                self.tests += 1;
            }
            Action::Probe { .. } | Action::Iprobe { .. } => {
                self.call();
                self.probes += 1;
            }
            Action::Collective { .. } | Action::Finalize => self.call(),
        }
    }
}

/// A rank's workload, its actions counted into a shared [`Tally`].
struct Counted {
    inner: Box<dyn RankWorkload>,
    tally: Arc<Mutex<Tally>>,
}

impl RankWorkload for Counted {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        let mut t = self.tally.lock().expect("tally");
        t.outcome(&last);
        let next = self.inner.next(last);
        if let Some(Ok(a)) = &next {
            t.action(a);
        }
        next
    }
}

/// Simulates `workloads` with rank `rank`'s actions counted: its tally, its seconds per
/// kind of span, and the end date.
fn simulate(
    platform: &Platform,
    config: &SimConfig,
    mut workloads: Vec<Box<dyn RankWorkload>>,
    rank: usize,
) -> Result<(Tally, BTreeMap<&'static str, f64>, f64), String> {
    let n = workloads.len() as u32;
    if rank >= workloads.len() {
        return Err(format!("rank {rank}: the run has {n} ranks"));
    }
    let tally = Arc::new(Mutex::new(Tally::default()));
    let inner = workloads.remove(rank);
    workloads.insert(
        rank,
        Box::new(Counted {
            inner,
            tally: tally.clone(),
        }),
    );
    let hosts = platform::map_ranks(platform, n, &Mapping::Sequential { ranks_per_host: 1 })
        .map_err(|e| format!("cannot place {n} ranks: {e}"))?;
    let mut config = config.clone();
    config.timeline = true;
    let result = Simulation::new(platform, config, hosts, workloads)
        .and_then(|s| s.run())
        .map_err(|e| e.to_string())?;
    let mut spent = BTreeMap::new();
    for s in result.timeline.iter().filter(|s| s.rank as usize == rank) {
        *spent.entry(s.name).or_insert(0.0) += s.end_s - s.start_s;
    }
    let mut t = std::mem::take(&mut *tally.lock().expect("tally"));
    t.call();
    Ok((t, spent, result.makespan_s))
}

/// The size class of a computation of `secs` seconds, as a label.
fn bucket(secs: f64) -> &'static str {
    match secs {
        s if s < 1e-6 => "< 1 us",
        s if s < 1e-5 => "1-10 us",
        s if s < 1e-4 => "10-100 us",
        s if s < 1e-3 => "0.1-1 ms",
        s if s < 1e-2 => "1-10 ms",
        _ => ">= 10 ms",
    }
}

/// Prints the two tallies side by side; `speed` turns flops into seconds.
fn print(
    skel: &(Tally, BTreeMap<&str, f64>, f64),
    ti: &(Tally, BTreeMap<&str, f64>, f64),
    speed: f64,
) {
    let (a, b) = (&skel.0, &ti.0);
    // One line of the side-by-side table: a label, the skeleton's figure, the trace's.
    let row = |label: &str, x: String, y: String| println!("{label:<36} {x:>14} {y:>14}");
    let secs = |v: f64| format!("{v:.6}");
    row("", "skeleton".into(), "HPL (TI trace)".into());
    row("simulated end date, s", secs(skel.2), secs(ti.2));
    let mut keys: Vec<_> = a.messages.keys().chain(b.messages.keys()).collect();
    keys.sort();
    keys.dedup();
    println!("messages (direction, peer, bytes):");
    for k in keys {
        let (x, y) = (
            a.messages.get(k).copied().unwrap_or(0),
            b.messages.get(k).copied().unwrap_or(0),
        );
        let mark = if x == y { "" } else { "  *" };
        println!(
            "  {:<34} {x:>14} {y:>14}{mark}",
            format!("{} {} {}", k.0, k.1, k.2)
        );
    }
    let total = |t: &Tally| t.messages.values().sum::<u64>().to_string();
    row("messages, all", total(a), total(b));
    for kind in ["send", "isend", "recv", "irecv", "sendrecv"] {
        let n = |t: &Tally| t.calls.get(kind).copied().unwrap_or(0).to_string();
        row(&format!("{kind} calls"), n(a), n(b));
    }
    row("probes", a.probes.to_string(), b.probes.to_string());
    row("tests", a.tests.to_string(), b.tests.to_string());
    row("waits", a.waits.to_string(), b.waits.to_string());
    row(
        "computation, s",
        secs(a.flops / speed),
        secs(b.flops / speed),
    );
    row(
        "  of which in the factorization, s",
        secs(a.timed / speed),
        secs(b.timed / speed),
    );
    row(
        "pieces of computation",
        a.pieces.len().to_string(),
        b.pieces.len().to_string(),
    );
    let by_bucket = |t: &Tally| {
        let mut m: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
        for f in &t.pieces {
            let e = m.entry(bucket(f / speed)).or_default();
            e.0 += 1;
            e.1 += f / speed;
        }
        m
    };
    let (ba, bb) = (by_bucket(a), by_bucket(b));
    for label in [
        "< 1 us",
        "1-10 us",
        "10-100 us",
        "0.1-1 ms",
        "1-10 ms",
        ">= 10 ms",
    ] {
        let (x, y) = (
            ba.get(label).copied().unwrap_or_default(),
            bb.get(label).copied().unwrap_or_default(),
        );
        println!(
            "  pieces {label:<27} {:>6} {:>7.3}s {:>6} {:>7.3}s",
            x.0, x.1, y.0, y.1
        );
    }
    let mut names: Vec<_> = skel.1.keys().chain(ti.1.keys()).copied().collect();
    names.sort();
    names.dedup();
    println!("simulated seconds per kind of span:");
    for n in names {
        let (x, y) = (
            skel.1.get(n).copied().unwrap_or(0.0),
            ti.1.get(n).copied().unwrap_or(0.0),
        );
        println!("  {n:<34} {x:>14.6} {y:>14.6}");
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [dat, plat, index, rank, cfg @ ..] = args else {
        return Err("usage: hpl_actions HPL.dat PLATFORM TI_INDEX RANK [KEY:VALUE ...]".into());
    };
    let rank: usize = rank
        .parse()
        .map_err(|_| format!("rank `{rank}` is not a number"))?;
    let dat_text = std::fs::read_to_string(dat).map_err(|e| format!("{dat}: {e}"))?;
    let runs = HplDat::parse(&dat_text, dat)
        .map_err(|e| e.to_string())?
        .runs();
    let [hpl] = runs.as_slice() else {
        return Err(format!(
            "{dat}: {} configurations, expected one",
            runs.len()
        ));
    };
    // Every pivot exchange and every probe, as HPL makes them, to line them up.
    let hpl = &mpiscope_hpl::Run {
        pivots: mpiscope_hpl::Pivots::Messages,
        polls: mpiscope_hpl::Polls::Chunks,
        ..hpl.clone()
    };
    let platform = platform::load(Path::new(plat)).map_err(|e| format!("{plat}: {e}"))?;
    let mut options = platform.config.clone();
    for kv in cfg {
        let (k, v) = kv
            .split_once(':')
            .ok_or_else(|| format!("option `{kv}`: expected KEY:VALUE"))?;
        options.insert(k.to_owned(), v.to_owned());
    }
    let config = SimConfig::for_options(&options, "smpi")?;
    let kernels = Kernels::from_config(&platform.config)?;
    let speed = platform
        .hosts
        .first()
        .map(|h| h.speed)
        .ok_or("the platform has no host")?;
    let speeds = vec![speed; (hpl.p * hpl.q) as usize];
    let skel = simulate(
        &platform,
        &config,
        mpiscope_hpl::workloads(hpl, kernels, &speeds),
        rank,
    )?;
    let input =
        workload::open(Path::new(index), &OpenOptions::default()).map_err(|e| e.to_string())?;
    let loaded = input.load(&speeds).map_err(|e| e.to_string())?;
    let ti = simulate(&platform, &config, loaded.workloads, rank)?;
    println!(
        "rank {rank} of {} x {}, N = {}, NB = {}",
        hpl.p, hpl.q, hpl.n, hpl.nb
    );
    print(&skel, &ti, speed);
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("hpl_actions: {e}");
        std::process::exit(1);
    }
}
