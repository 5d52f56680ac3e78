//! `mpiscope-bench`: MPITEST, the benchmark of basic MPI operations ([MPITEST]).
//!
//! Run it under `mpirun`: `mpirun -np 4 mpiscope-bench m1 M100 K10 T100 t100000 R2
//! otransfer.dat` (MPITEST's syntax) or with long options (`--help`). Rank 0 writes the
//! table (or `--json` / `--csv`) to the file given by `o` / `--output`, else to stdout.
//!
//! Modules: [`params`] (command line), [`method`] (MPITEST's timing scheme, MPI-free),
//! [`stats`] (median and its confidence interval), [`ops`] (the operations with MPI),
//! [`report`] (output).

mod method;
mod ops;
mod params;
mod report;
mod stats;

use std::io::Write;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};

use method::{Harness, Overheads, Samples};
use ops::Op;
use params::Params;
use report::{Results, Row};
use stats::Summary;

/// The MPI clock and barrier of a communicator.
struct Mpi<'a> {
    world: &'a SimpleCommunicator,
}

impl Harness for Mpi<'_> {
    fn now(&mut self) -> f64 {
        mpi::time()
    }
    fn barrier(&mut self) {
        self.world.barrier();
    }
}

fn main() {
    let Some(universe) = mpi::initialize() else {
        eprintln!("mpiscope-bench: MPI is already initialized");
        std::process::exit(2);
    };
    let world = universe.world();
    let me = world.rank();
    let params = match Params::from_args(std::env::args()) {
        Ok(p) => p,
        Err(e) => {
            if me == 0 {
                let _ = e.print();
            }
            drop(universe);
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let code = match run(&world, &params) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiscope-bench: rank {me}: {e:#}");
            world.abort(2)
        }
    };
    drop(universe);
    std::process::exit(code);
}

/// The operations to run, in MPITEST's order.
fn selected(params: &Params) -> anyhow::Result<Vec<Op>> {
    if params.only.is_empty() {
        return Ok(ops::ALL.to_vec());
    }
    let mut want = Vec::new();
    for name in &params.only {
        let op = Op::parse(name).ok_or_else(|| {
            anyhow::anyhow!(
                "--only {name}: no such operation (known: {})",
                ops::ALL
                    .into_iter()
                    .chain(ops::EXTRA)
                    .map(Op::key)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        want.push(op);
    }
    Ok(ops::ALL
        .into_iter()
        .chain(ops::EXTRA)
        .filter(|o| want.contains(o))
        .collect())
}

fn run(world: &SimpleCommunicator, params: &Params) -> anyhow::Result<i32> {
    let np = world.size() as u64;
    let me = world.rank();
    if me == 0 {
        // Judged before the measurements, so a refused output costs no run.
        if let Some(path) = &params.output {
            mpiscope_files::check_output(path, &report::RESULTS, params.force)?;
        }
    }
    let ops = selected(params)?;
    let lengths = params.lengths();
    // Half of the transfer buffer sends, half receives.
    let half = (params.buffer / 8).max(1) as usize;
    let mut send = vec![1i32; half];
    let mut recv = vec![0i32; half];
    let mut h = Mpi { world };
    let mut rows = Vec::new();
    let mut first: Option<Overheads> = None;
    let mut invalid = false;
    for repeat in 1..=params.repeats {
        let o = method::overheads(&mut h, params.fast_iters);
        first.get_or_insert(o);
        for &op in &ops {
            let lens: Vec<Option<u64>> = if op.lengthless() {
                vec![None]
            } else {
                lengths.iter().map(|&n| Some(n)).collect()
            };
            for n in lens {
                let ints = n.unwrap_or(0);
                let mut row = Row {
                    repeat,
                    operation: op.seed_name(),
                    key: op.key(),
                    ints: n,
                    bytes: op.bytes(ints, np),
                    iterations: 0,
                    time: Summary::of(&[]),
                    raw: Summary::of(&[]),
                    bandwidth_mb_s: None,
                    unstable: false,
                    skipped: None,
                    valid: None,
                };
                if op.pairwise() && np < 2 {
                    row.skipped = Some("needs 2 processes".into());
                    rows.push(row);
                    continue;
                }
                let need = op.ints_needed(ints, np) / 2;
                if need > half as u64 {
                    row.skipped = Some(format!(
                        "needs a {}-byte buffer (b{} is {})",
                        need * 8,
                        params.buffer,
                        params.buffer
                    ));
                    rows.push(row);
                    continue;
                }
                let iters = if op.fast() {
                    params.fast_iters
                } else {
                    params.long_iters
                };
                let samples = match op {
                    Op::Timing => {
                        let s = method::timer_samples(&mut h, iters);
                        Samples {
                            raw: s.clone(),
                            corrected: s,
                        }
                    }
                    Op::Barrier => {
                        let s = method::barrier_samples(&mut h, iters, o.dt);
                        Samples {
                            raw: s.iter().map(|x| x + o.dt).collect(),
                            corrected: s,
                        }
                    }
                    op if op.sender_timed() => {
                        for _ in 0..params.warmup {
                            ops::sender_sample(op, world, ints as usize, &send, &mut recv);
                        }
                        let raw: Vec<f64> = (0..iters)
                            .map(|_| ops::sender_sample(op, world, ints as usize, &send, &mut recv))
                            .collect();
                        world.barrier();
                        // Only the sender's clock counts: one timer read is the correction.
                        let per = match op {
                            Op::MessageRate => ops::RATE_WINDOW as f64,
                            Op::BusySignal => 2.0,
                            _ => 1.0,
                        };
                        Samples {
                            corrected: raw.iter().map(|t| t - o.dt / per).collect(),
                            raw,
                        }
                    }
                    _ => method::measure(&mut h, &o, params.warmup, iters, params.reps, |_| {
                        ops::run(
                            op,
                            world,
                            ints as usize,
                            &send,
                            &mut recv,
                            params.one_buffer,
                        )
                    }),
                };
                let corrected = slowest(world, &samples.corrected);
                let raw = slowest(world, &samples.raw);
                if params.validate && !op.lengthless() {
                    let ok = ops::validate(op, world, ints as usize, &mut send, &mut recv);
                    if let Err(e) = &ok {
                        eprintln!("mpiscope-bench: {e}");
                    }
                    let mut all_ok = 0i32;
                    world.all_reduce_into(
                        &i32::from(ok.is_ok()),
                        &mut all_ok,
                        SystemOperation::min(),
                    );
                    row.valid = Some(all_ok == 1);
                    invalid |= all_ok != 1;
                }
                if me == 0 {
                    row.iterations = iters;
                    row.time = Summary::of(&corrected);
                    row.raw = Summary::of(&raw);
                    row.unstable = row.time.unstable(params.unstable_above);
                    if row.bytes > 0 && row.time.median > 0.0 {
                        row.bandwidth_mb_s = Some(row.bytes as f64 / row.time.median / 1e6);
                    }
                }
                rows.push(row);
            }
        }
    }
    if me == 0 {
        let results = Results {
            np: np as u32,
            mpi_library: mpi::environment::library_version().unwrap_or_default(),
            wtick: mpi::time_resolution(),
            overheads: first.unwrap_or(Overheads {
                dt: 0.0,
                db: 0.0,
                resolution: 0.0,
            }),
            params: params.into(),
            results: rows,
        };
        let text = if params.json {
            serde_json::to_string_pretty(&results)? + "\n"
        } else if params.csv {
            results.to_csv()
        } else {
            results.to_text()
        };
        match &params.output {
            Some(path) => {
                mpiscope_files::write_output(path, &report::RESULTS, params.force, text.as_bytes())?
            }
            None => std::io::stdout().write_all(text.as_bytes())?,
        }
    }
    Ok(if invalid { 1 } else { 0 })
}

/// Per iteration, the largest of the ranks' samples (on rank 0; empty elsewhere).
fn slowest(world: &SimpleCommunicator, samples: &[f64]) -> Vec<f64> {
    let np = world.size() as usize;
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut all = vec![0.0f64; samples.len() * np];
        root.gather_into_root(samples, &mut all[..]);
        (0..samples.len())
            .map(|i| {
                (0..np)
                    .map(|r| all[r * samples.len() + i])
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect()
    } else {
        root.gather_into(samples);
        Vec::new()
    }
}
