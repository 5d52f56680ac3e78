//! `mpiscope calibrate RESULTS.json -o platform.toml`: fits the flow model to
//! `mpiscope-bench --json` results, times this host's dgemm and dtrsm (OpenBLAS, one thread)
//! and writes a one-host platform with the fitted factors, speed and kernel models.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use mpiscope_calibrate::cold::Cold;
use mpiscope_calibrate::compute::{ComputeModel, KernelSample};
use mpiscope_calibrate::protocol::Protocol;
use mpiscope_calibrate::reduction::Reduction;
use mpiscope_calibrate::strided::Strided;
use mpiscope_calibrate::{fit, points_from_bench, Fit, Network, Point};

/// Options of `mpiscope calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// `mpiscope-bench --json` output with a `send_recv` size sweep (2 ranks or more).
    results: PathBuf,
    /// Platform file to write (TOML).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing file at `-o` that is not a calibrated platform (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    force: bool,
    /// At most this many linear pieces (1 to 6: the fit tries every way to cut the sizes,
    /// which grows as their number to this power).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=6))]
    pieces: u64,
    /// Take the fewest pieces whose every point is within this relative error.
    #[arg(long, default_value_t = 0.05, value_parser = crate::inputs::non_negative)]
    tolerance: f64,
    /// Do not time the BLAS kernels (the platform keeps the default host speed).
    #[arg(long)]
    no_compute: bool,
    /// Timed calls per kernel shape and pass (the median is kept).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    kernel_samples: u32,
    /// Passes over the kernel shapes (per shape, the median of the passes is kept), and
    /// rounds of the per-core speed measurement under load.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    kernel_passes: u32,
    /// The clock the kernels are timed with: `wall`, or `thread`, the thread's CPU time,
    /// as SMPI times a program's computations (a shared machine's load is not counted).
    #[arg(long, value_name = "CLOCK", default_value = "wall", value_parser = ["wall", "thread"])]
    kernel_clock: String,
    /// Cores busy at once when measuring the per-core speed under load (default: the
    /// benchmark's process count, the platform's cores; 1 skips the measurement).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    busy_cores: Option<u32>,
    /// `mpiscope-bench --json` output with SIGNAL WITH BUSY CORES (`mpiscope bench -np 4
    /// --bind-to core --only busy_signal` on 2 cores): the oversubscribed wake-up delay
    /// (also read from RESULTS when it has that row).
    #[arg(long, value_name = "RESULTS")]
    wake_up: Option<PathBuf>,
    /// `mpiscope-bench --json` outputs with VECTOR SEND (and COLD SEND) taken between the
    /// runs to be predicted (repeatable): the strided pack cost comes from the slowest of
    /// them instead of RESULTS, as the strided rate of some machines has fast phases that
    /// HPL's panels do not show (`scripts/bench-hpl-real.sh` writes one after each hpcc run).
    #[arg(long, value_name = "RESULTS")]
    strided: Vec<PathBuf>,
    /// Print the fit as JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar and no messages while timing the kernels (warnings and errors are
    /// still printed).
    #[arg(short, long)]
    quiet: bool,
}

/// One worker process of the per-core speed under load (the hidden `dgemm-worker`).
#[derive(Args, Debug)]
pub struct DgemmWorkerArgs {
    m: usize,
    n: usize,
    k: usize,
    seconds: f64,
}

/// Runs one `dgemm-worker`: dgemm of `m x k` by `k x n` for `seconds`.
pub fn dgemm_worker(a: DgemmWorkerArgs) -> Result<i32> {
    mpiscope_kernels::dgemm_worker(openblas()?, (a.m, a.n, a.k), a.seconds)?;
    Ok(0)
}

/// OpenBLAS, opened at run time; when missing, the error says what to install and that
/// `--no-compute` calibrates without it.
fn openblas() -> Result<&'static mpiscope_kernels::OpenBlas> {
    mpiscope_kernels::openblas()
        .map_err(|e| anyhow::anyhow!("{e}; or calibrate the network alone with --no-compute"))
}

/// Times the default kernel shapes on one thread, with a progress bar on a terminal.
fn time_kernels(
    samples: u32,
    passes: u32,
    clock: mpiscope_kernels::Clock,
    quiet: bool,
) -> Result<Vec<KernelSample>> {
    let blas = openblas()?;
    blas.use_one_thread();
    mpiscope_kernels::use_clock(clock);
    let shapes = mpiscope_kernels::default_shapes();
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(shapes.len() as u64)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("timing BLAS kernels {bar:30} {pos}/{len}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_length((shapes.len() * passes as usize) as u64);
    let out = mpiscope_kernels::measure_in_passes(
        blas,
        &shapes,
        passes as usize,
        samples as usize,
        &mut |done, _| bar.set_position(done as u64),
    );
    bar.finish_and_clear();
    Ok(out)
}

/// What a calibration found, for the platform file and the summary.
struct Calibrated {
    points: Vec<Point>,
    fit: Fit,
    net: Network,
    /// The nominal bandwidth before COLD SEND's rate replaced the largest messages'.
    warm_bandwidth: f64,
    cold: Option<Cold>,
    /// The size from which messages take COLD SEND's rate.
    cold_from: Option<u64>,
    protocol: Option<Protocol>,
    wake_up: Option<f64>,
    strided: Option<Strided>,
    reduction: Option<Reduction>,
    kernels: Vec<KernelSample>,
    compute: Option<ComputeModel>,
}

/// Runs `mpiscope calibrate`.
pub fn calibrate(a: CalibrateArgs) -> Result<i32> {
    // Judged before the fit (and the kernel timings), so a refused output costs nothing.
    mpiscope_files::check_output(&a.output, &crate::outputs::CALIBRATED_PLATFORM, a.force)?;
    let path = a.results.display().to_string();
    let text =
        std::fs::read_to_string(&a.results).with_context(|| format!("cannot read {path}"))?;
    let (points, np) = points_from_bench(&text, &path)?;
    let f = fit(&points, a.pieces as usize, a.tolerance)?;
    let mut net = Network::from_fit(&f);
    let warm_bandwidth = net.bandwidth;
    let cold = Cold::from_bench(&text, &path)?;
    let cold_from = cold.map(|c| c.apply(&mut net));
    // VECTOR SEND's caches are cold: compare it with COLD SEND when measured.
    let contiguous = cold.map_or(net.bandwidth, |c| c.bytes_per_second());
    let protocol = Protocol::from_bench(&text, &path)?;
    let wake_up = wake_up(&a, &text, &path, net.latency)?;
    let strided = strided(&a, &text, &path, contiguous)?;
    let reduction = Reduction::from_bench(&text, &path)?;
    let (kernels, compute) = compute(&a, np)?;
    let c = Calibrated {
        points,
        fit: f,
        net,
        warm_bandwidth,
        cold,
        cold_from,
        protocol,
        wake_up,
        strided,
        reduction,
        kernels,
        compute,
    };
    let mut extra = String::new();
    if let (Some(cold), Some(from)) = (&c.cold, c.cold_from) {
        extra += &cold.config_lines(from, c.warm_bandwidth);
    }
    if let Some(d) = c.wake_up {
        extra += &mpiscope_calibrate::scheduler::config_lines(d);
    }
    if let Some(s) = &c.strided {
        extra += &s.config_lines();
    }
    if let Some(r) = &c.reduction {
        extra += &r.config_lines();
    }
    let platform = c.net.platform_toml(
        np.max(1),
        &path,
        c.compute.as_ref(),
        c.protocol.as_ref(),
        &extra,
    );
    crate::outputs::write(
        &a.output,
        &crate::outputs::CALIBRATED_PLATFORM,
        a.force,
        platform.as_bytes(),
    )?;
    if a.json {
        crate::outputs::write_stdout(&crate::outputs::json(&c.json())?)?;
    } else {
        let mut s = c.text(&path);
        s += &format!(
            "wrote {} (replay with --mapping sequential:{np})\n",
            a.output.display()
        );
        crate::outputs::write_stdout(&s)?;
    }
    Ok(0)
}

/// The oversubscribed wake-up delay, from `--wake-up` or the results.
fn wake_up(a: &CalibrateArgs, text: &str, path: &str, latency: f64) -> Result<Option<f64>> {
    Ok(match &a.wake_up {
        Some(file) => {
            let p = file.display().to_string();
            let t = std::fs::read_to_string(file).with_context(|| format!("cannot read {p}"))?;
            mpiscope_calibrate::scheduler::wake_up_from_bench(&t, &p, latency)?
                .with_context(|| format!("{p}: no busy_signal measurement"))
                .map(Some)?
        }
        None => mpiscope_calibrate::scheduler::wake_up_from_bench(text, path, latency)?,
    })
}

/// The strided pack cost, from the `--strided` runs or the results.
fn strided(a: &CalibrateArgs, text: &str, path: &str, contiguous: f64) -> Result<Option<Strided>> {
    Ok(if a.strided.is_empty() {
        Strided::from_bench(text, path, contiguous)?
    } else {
        let mut runs = Vec::with_capacity(a.strided.len());
        for file in &a.strided {
            let p = file.display().to_string();
            let t = std::fs::read_to_string(file).with_context(|| format!("cannot read {p}"))?;
            runs.push((t, p));
        }
        let s = Strided::from_runs(&runs, contiguous)?;
        if s.is_none() {
            anyhow::bail!(
                "--strided: no VECTOR SEND of two sizes of at least {} KiB in {}",
                mpiscope_calibrate::strided::MIN_BYTES >> 10,
                runs.iter()
                    .map(|r| r.1.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        s
    })
}

/// The BLAS kernels' timings and the compute model fitted to them (none with
/// `--no-compute`), with the per-core speed under load.
fn compute(a: &CalibrateArgs, np: u32) -> Result<(Vec<KernelSample>, Option<ComputeModel>)> {
    let kernels = if a.no_compute {
        Vec::new()
    } else {
        let clock = if a.kernel_clock == "thread" {
            mpiscope_kernels::Clock::Thread
        } else {
            mpiscope_kernels::Clock::Wall
        };
        time_kernels(a.kernel_samples, a.kernel_passes, clock, a.quiet)?
    };
    let compute = if a.no_compute {
        None
    } else {
        let mut model = ComputeModel::fit(&kernels)?;
        let busy = a.busy_cores.unwrap_or(np.max(1));
        if busy > 1 {
            // HPL's trailing update shape; each count runs for half a second per round.
            if !a.quiet {
                eprintln!("timing dgemm with 1 to {busy} cores busy");
            }
            let exe = std::env::current_exe().context("cannot find the mpiscope executable")?;
            let worker = || {
                let mut c = std::process::Command::new(&exe);
                c.args(["dgemm-worker", "2048", "2048", "128", "0.5"]);
                c
            };
            let speeds =
                mpiscope_kernels::core_speeds(busy as usize, a.kernel_passes as usize, &worker)
                    .context("timing dgemm with several cores busy")?;
            model.core_efficiency = speeds.iter().map(|s| s / speeds[0]).collect();
        }
        Some(model)
    };
    Ok((kernels, compute))
}

impl Calibrated {
    /// The calibration as JSON (`--json`).
    fn json(&self) -> serde_json::Value {
        let Calibrated {
            points,
            fit: f,
            net,
            cold,
            cold_from,
            protocol,
            wake_up,
            strided,
            reduction,
            kernels,
            compute,
            ..
        } = self;
        serde_json::json!({
            "points": points,
            "fit": f,
            "network": net,
            "kernels": kernels,
            "compute": compute,
            "protocol": protocol,
            "oversubscribed_wake_up_s": wake_up,
            "strided": strided,
            "reduction": reduction,
            "cold": cold.map(|c| serde_json::json!({
                "bytes_per_second": c.bytes_per_second(),
                "from_bytes": cold_from,
                "samples": c.samples,
            })),
            "loggp": protocol.map(|p| {
                let (l, o, g, big_g) = p.loggp(net);
                serde_json::json!({ "L": l, "o": o, "g": g, "G": big_g })
            }),
        })
    }

    /// The calibration as text, but for its last line.
    fn text(&self, path: &str) -> String {
        let Calibrated {
            points,
            fit: f,
            net,
            warm_bandwidth,
            cold,
            cold_from,
            protocol,
            wake_up,
            strided,
            reduction,
            compute,
            ..
        } = self;
        let mut s = format!(
            "{} sizes from {path}; nominal latency {:.3} us, bandwidth {:.1} MB/s; R^2 {:.5}\n",
            points.len(),
            net.latency * 1e6,
            net.bandwidth / 1e6,
            f.r2
        );
        if f.pieces
            .iter()
            .any(|p| p.bandwidth >= mpiscope_calibrate::CLAMPED_BANDWIDTH)
        {
            s +=
                "warning: in some piece the time does not grow with the size (noisy measurements? \
                  run again on a quiet machine, with more iterations or --reps)\n";
        }
        for p in &f.pieces {
            s += &format!(
                "  {:>10} .. {:<10} bytes: {:.3} us + S / {:.1} MB/s (largest error {:.1}%)\n",
                p.from_bytes,
                p.to_bytes,
                p.latency * 1e6,
                p.bandwidth / 1e6,
                p.max_error * 100.0
            );
        }
        if let Some(p) = &protocol {
            let (l, o, g, big_g) = p.loggp(net);
            s += &format!(
                "blocking sends return at once up to {} bytes, wait for the receiver from {} bytes; \
                 LogGP L {:.3} us, o {:.3} us, g {:.3} us, G {:.3e} s/B\n",
                p.largest_eager.map_or("-".into(), |b| b.to_string()),
                p.smallest_rendezvous.map_or("-".into(), |b| b.to_string()),
                l * 1e6,
                o * 1e6,
                g * 1e6,
                big_g
            );
        }
        if let (Some(c), Some(from)) = (&cold, cold_from) {
            s += &format!(
                "messages from memory (COLD SEND): {:.2} GB/s against {:.2} with warm caches; \
                 the platform's messages of {from} bytes or more take it\n",
                c.bytes_per_second() / 1e9,
                warm_bandwidth / 1e9,
            );
        }
        if let Some(v) = &strided {
            s += &format!(
                "messages sent from a strided layout: {:.2} GB/s ({:.3e} s per byte beyond a \
                 contiguous message at {:.2} GB/s){}\n",
                v.gigabytes_per_second(),
                v.extra_per_byte,
                v.contiguous / 1e9,
                if v.runs_gigabytes_per_second.is_empty() {
                    String::new()
                } else {
                    let rates: Vec<String> = v
                        .runs_gigabytes_per_second
                        .iter()
                        .map(|r| format!("{r:.2}"))
                        .collect();
                    format!(
                        ", the slowest of the --strided runs ({} GB/s)",
                        rates.join(", ")
                    )
                }
            );
        }
        if let Some(r) = reduction {
            s += &format!(
                "a reduction operator (REDUCE LOCAL) combines {:.2} GB/s ({:.3e} s per byte)\n",
                r.bytes_per_second() / 1e9,
                r.seconds_per_byte
            );
        }
        if let Some(d) = wake_up {
            s += &format!(
                "a rank waiting in MPI gets its core back from a computing rank after {:.3} ms\n",
                d * 1e3
            );
        }
        if let Some(c) = compute {
            s += &compute_text(c);
        }
        s
    }
}

/// The compute model's lines of the summary: each kernel's fit, the per-core speed under
/// load.
fn compute_text(c: &ComputeModel) -> String {
    let mut s = String::new();
    for (k, one) in c.fits() {
        s += &format!(
            "{}: {}: {:.2} {} (one thread), R^2 {:.5}, largest error {} over {} shapes; \
             t = {:.4e} {}: R^2 {:.5}, largest error {}\n",
            k.kernel.name(),
            k.model_text(),
            k.flops / 1e9,
            k.kernel.rate_unit(),
            k.r2,
            k.error_text(),
            k.samples,
            one.seconds_per_work,
            one.kernel.work_text(),
            one.r2,
            one.error_text(),
        );
        if k.kernel == mpiscope_calibrate::compute::Kernel::Dgemm {
            let two = &c.dgemm_two_term;
            s += &format!(
                "dgemm without the packing terms: {}: {:.2} Gflop/s, R^2 {:.5}, largest error {}\n",
                two.model_text(),
                two.flops / 1e9,
                two.r2,
                two.error_text()
            );
        }
    }
    if !c.core_efficiency.is_empty() {
        let e: Vec<String> = c
            .core_efficiency
            .iter()
            .map(|e| format!("{e:.3}"))
            .collect();
        s += &format!(
            "per-core dgemm speed with 1..{} cores busy, relative to one alone: {}\n",
            e.len(),
            e.join(", ")
        );
    }
    s
}
