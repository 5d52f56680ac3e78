//! One benchmark run: for each repeat, the timer and barrier overheads (DT, DB), then every
//! selected operation at every array length, each a row of the results; rank 0 writes them.
//!
//! Every rank runs the same sweep in the same order (the operations are collective or
//! pairwise, so the ranks must agree on what comes next). A row is skipped, on every rank
//! alike, when its operation needs two processes or a larger buffer. Otherwise the samples
//! are taken by the original timing scheme ([`method::measure`]: barrier, t1, operation,
//! barrier, t2), or on the sender alone for the operations timed there, or as plain timer
//! and barrier samples; per iteration the slowest rank's sample counts (gathered to rank
//! 0, [`slowest`]). With `--validate` each operation's result is checked once, outside the
//! timed loop, and the run ends with exit code 1 if any rank found a wrong result.

use std::io::Write;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::method::{self, Harness, Overheads, Samples};
use crate::ops::{self, Op};
use crate::params::Params;
use crate::report::{self, Results, Row};
use crate::stats::Summary;

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

/// Runs the benchmark on `world` as `params` say; returns the exit code (1 when a
/// validation failed). Rank 0 writes the results.
pub fn run(world: &SimpleCommunicator, params: &Params) -> anyhow::Result<i32> {
    if world.rank() == 0 {
        // Judged before the measurements, so a refused output costs no run.
        if let Some(path) = &params.output {
            mpiscope_files::check_output(path, &report::RESULTS, params.force)?;
        }
    }
    let ops = selected(params)?;
    let mut sweep = Sweep::new(world, params);
    let mut rows = Vec::new();
    let mut first: Option<Overheads> = None;
    for repeat in 1..=params.repeats {
        let o = method::overheads(&mut sweep.h, params.fast_iters);
        first.get_or_insert(o);
        for &op in &ops {
            let lens: Vec<Option<u64>> = if op.lengthless() {
                vec![None]
            } else {
                sweep.lengths.iter().map(|&n| Some(n)).collect()
            };
            for n in lens {
                rows.push(sweep.row(repeat, op, n, &o));
            }
        }
    }
    if world.rank() == 0 {
        write_results(world, params, first, rows)?;
    }
    Ok(if sweep.invalid { 1 } else { 0 })
}

/// The operations to run, in the original order.
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

/// What every row of a run shares: the communicator, the parameters, the buffers.
struct Sweep<'a> {
    world: &'a SimpleCommunicator,
    params: &'a Params,
    /// Processes.
    np: u64,
    /// Array lengths, in integers.
    lengths: Vec<u64>,
    /// Integers in each half of the transfer buffer.
    half: usize,
    /// Half of the transfer buffer sends, half receives.
    send: Vec<i32>,
    recv: Vec<i32>,
    h: Mpi<'a>,
    /// Whether a validation failed.
    invalid: bool,
}

impl<'a> Sweep<'a> {
    fn new(world: &'a SimpleCommunicator, params: &'a Params) -> Sweep<'a> {
        let half = (params.buffer / 8).max(1) as usize;
        Sweep {
            world,
            params,
            np: world.size() as u64,
            lengths: params.lengths(),
            half,
            send: vec![1i32; half],
            recv: vec![0i32; half],
            h: Mpi { world },
            invalid: false,
        }
    }

    /// The row of `op` on arrays of `n` integers (none: lengthless) in repeat `repeat`,
    /// measured with the overheads `o` (statistics on rank 0 only).
    fn row(&mut self, repeat: u32, op: Op, n: Option<u64>, o: &Overheads) -> Row {
        let params = self.params;
        let ints = n.unwrap_or(0);
        let mut row = Row::new(repeat, op, n, self.np);
        if op.pairwise() && self.np < 2 {
            row.skipped = Some("needs 2 processes".into());
            return row;
        }
        let need = op.ints_needed(ints, self.np) / 2;
        if need > self.half as u64 {
            row.skipped = Some(format!(
                "needs a {}-byte buffer (b{} is {})",
                need * 8,
                params.buffer,
                params.buffer
            ));
            return row;
        }
        let iters = if op.fast() {
            params.fast_iters
        } else {
            params.long_iters
        };
        let samples = self.samples(op, ints as usize, iters, o);
        let corrected = slowest(self.world, &samples.corrected);
        let raw = slowest(self.world, &samples.raw);
        // Every rank took the same kind of samples, so every rank joins this gather or none.
        let in_call = (!samples.in_call.is_empty()).then(|| slowest(self.world, &samples.in_call));
        if params.validate && !op.lengthless() {
            row.valid = Some(self.validate(op, ints as usize));
        }
        if self.world.rank() == 0 {
            row.iterations = iters;
            row.time = Summary::of(&corrected);
            row.raw = Summary::of(&raw);
            row.in_call = in_call.map(|s| Summary::of(&s));
            row.unstable = row.time.unstable(params.unstable_above);
            if row.bytes > 0 && row.time.median > 0.0 {
                row.bandwidth_mb_s = Some(row.bytes as f64 / row.time.median / 1e6);
            }
        }
        row
    }

    /// This rank's `iters` samples of `op` on `ints` integers, raw and corrected by the
    /// overheads `o`.
    fn samples(&mut self, op: Op, ints: usize, iters: u32, o: &Overheads) -> Samples {
        let params = self.params;
        match op {
            Op::Timing => {
                let s = method::timer_samples(&mut self.h, iters);
                Samples {
                    raw: s.clone(),
                    corrected: s,
                    in_call: Vec::new(),
                }
            }
            Op::Barrier => {
                let s = method::barrier_samples(&mut self.h, iters, o.dt);
                Samples {
                    raw: s.iter().map(|x| x + o.dt).collect(),
                    corrected: s,
                    in_call: Vec::new(),
                }
            }
            op if op.sender_timed() => {
                for _ in 0..params.warmup {
                    ops::sender_sample(op, self.world, ints, &self.send, &mut self.recv);
                }
                let raw: Vec<f64> = (0..iters)
                    .map(|_| ops::sender_sample(op, self.world, ints, &self.send, &mut self.recv))
                    .collect();
                self.world.barrier();
                // Only the sender's clock counts: one timer read is the correction.
                let per = match op {
                    Op::MessageRate => ops::RATE_WINDOW as f64,
                    Op::ReduceLocal => ops::REDUCE_LOCAL_CALLS as f64,
                    Op::BusySignal => 2.0,
                    _ => 1.0,
                };
                Samples {
                    corrected: raw.iter().map(|t| t - o.dt / per).collect(),
                    raw,
                    in_call: Vec::new(),
                }
            }
            _ => {
                let (world, send, recv) = (self.world, &self.send, &mut self.recv);
                let (warmup, reps) = (params.warmup, params.reps);
                method::measure(&mut self.h, o, warmup, iters, reps, params.in_call, |_| {
                    ops::run(op, world, ints, send, recv, params.one_buffer)
                })
            }
        }
    }

    /// Checks `op`'s result on `ints` integers on every rank; true when every rank found
    /// it right (a wrong one is reported by its rank, and makes the run invalid).
    fn validate(&mut self, op: Op, ints: usize) -> bool {
        let ok = ops::validate(op, self.world, ints, &mut self.send, &mut self.recv);
        if let Err(e) = &ok {
            eprintln!("mpiscope-bench: {e}");
        }
        let mut all_ok = 0i32;
        self.world
            .all_reduce_into(&i32::from(ok.is_ok()), &mut all_ok, SystemOperation::min());
        self.invalid |= all_ok != 1;
        all_ok == 1
    }
}

/// Writes the results (rank 0): the table, `--json` or `--csv`, to `--output` or stdout.
fn write_results(
    world: &SimpleCommunicator,
    params: &Params,
    first: Option<Overheads>,
    rows: Vec<Row>,
) -> anyhow::Result<()> {
    let results = Results {
        np: world.size() as u32,
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
    Ok(())
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
