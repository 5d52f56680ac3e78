//! The `mpiscope` command line: a thin shell over the mpiscope libraries.

mod batch;
mod bench;
mod calibrate;
mod child;
mod hpl;
mod inputs;
mod launch;
mod outputs;
mod overlap;
mod plan;
mod recorder;
mod replay;
mod trace_dir;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mpiscope", version, about = "Record, understand and predict MPI programs", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Built once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Trace an MPI program: `mpiscope trace -o DIR -- mpirun -np 4 ./app args`.
    Trace(launch::TraceArgs),
    /// Print the events of a trace as text, one line each.
    Dump {
        /// Run directory written by `mpiscope trace`.
        dir: PathBuf,
        /// Only this rank.
        #[arg(long)]
        rank: Option<u32>,
        /// At most this many events per rank.
        #[arg(long)]
        limit: Option<u64>,
        /// Resolve callsites to function and file:line (needs debug information).
        #[arg(long)]
        symbols: bool,
        /// Print communicator and callsite tables after each rank.
        #[arg(long)]
        defs: bool,
    },
    /// Convert a trace for another tool: `--format simgrid-ti` writes SimGrid
    /// time-independent traces for `smpirun -replay OUT/index.txt`; `chrome` one JSON file
    /// for Perfetto (calls and message arrows); `paraver` OUT.prv, OUT.pcf and OUT.row;
    /// `otf2` the archive OUT/traces.otf2 (Vampir, Scalasca).
    Export {
        /// Run directory written by `mpiscope trace`.
        dir: PathBuf,
        /// Output format: simgrid-ti, chrome, paraver or otf2.
        #[arg(long, default_value = "simgrid-ti")]
        format: String,
        /// Output: a directory (simgrid-ti), a file (chrome), or the path without its
        /// extension (paraver).
        #[arg(short, long)]
        output: PathBuf,
        /// Host speed (flop/s) turning compute bursts into flop counts.
        #[arg(long, default_value_t = 1e9, value_parser = inputs::positive)]
        flops: f64,
        /// Drop compute bursts shorter than this many ns.
        #[arg(long, default_value_t = 0)]
        min_compute_ns: u64,
        /// Replace an existing output file that mpiscope did not write (never a
        /// directory, a symbolic link or a special file).
        #[arg(long)]
        force: bool,
    },
    /// Simulate a trace on a modeled platform: `mpiscope replay RUN_DIR|INDEX --platform
    /// P.xml`.
    Replay(replay::ReplayArgs),
    /// Simulate HPL from a standard HPL.dat on a modeled platform: `mpiscope hpl HPL.dat
    /// --platform FILE` prints HPL's result lines (`--json` for a list).
    Hpl(hpl::HplArgs),
    /// Run an MPI program with transparent non-blocking collectives (T-NBC): `mpiscope
    /// overlap -- mpirun -np 4 ./app`; `--trace-access` records the order it reads received
    /// data; `mpiscope overlap bench` measures overlap; `mpiscope overlap predict RUN`
    /// estimates the gain from a trace.
    Overlap(overlap::OverlapArgs),
    /// Benchmark the basic MPI operations (MPITEST): `mpiscope bench -np 4 m1 M100 K10
    /// T100 t1000 R2 otransfer.dat` runs `mpirun -np 4 mpiscope-bench ...`.
    Bench(bench::BenchArgs),
    /// Fit the simulator's network model to `mpiscope-bench --json` results and write a
    /// platform: `mpiscope calibrate results.json -o calibrated.toml`.
    Calibrate(calibrate::CalibrateArgs),
    /// One worker process of `calibrate`'s per-core speed under load (not for users).
    #[command(hide = true)]
    DgemmWorker {
        m: usize,
        n: usize,
        k: usize,
        seconds: f64,
    },
    /// Run a capacity-planning study: `mpiscope plan STUDY.toml` sweeps node speed, link
    /// bandwidth and latency, topologies or mappings over a workload and writes
    /// results.csv, results.json and SVG figures (resumable; shares points under mpirun).
    Plan(plan::PlanArgs),
    /// Per-function counts, times and bytes; per-rank compute versus MPI time.
    Report {
        /// Run directory written by `mpiscope trace`.
        dir: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Only calls entering within FROM:TO, seconds since the run's start (`12.5:`,
        /// `:30`, `10:20`).
        #[arg(long, value_name = "FROM:TO")]
        window: Option<String>,
        /// Also write a self-contained HTML report (tables, SVG figures, loop structure).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Suggest a placement of ranks on nodes of this many ranks that lowers the
        /// point-to-point bytes between nodes.
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
        ranks_per_node: Option<u32>,
        /// Replace an existing output file that mpiscope did not write (never a
        /// directory, a symbolic link or a special file).
        #[arg(long)]
        force: bool,
    },
    /// Runs of one program side by side (scaling): wall time, MPI share, compute bursts
    /// (mean, harmonic mean), calls per rank and bytes per call of each function.
    Compare {
        /// Run directories (any order: they are sorted by rank count).
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML page of scaling curves (burst harmonic mean and
        /// mean, calls per rank, bytes per call, MPI fraction against the rank count).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Replace an existing output file that mpiscope did not write (never a
        /// directory, a symbolic link or a special file).
        #[arg(long)]
        force: bool,
    },
    /// The program's loop structure, recovered by lossless compression of each rank's
    /// calls and compute bursts: nested loops with iteration counts, mean times and
    /// totals, ranks with the same structure grouped.
    Structure {
        /// Run directory written by `mpiscope trace`.
        dir: PathBuf,
        /// Only this rank.
        #[arg(long)]
        rank: Option<u32>,
        /// `low`: call and callsite; `high`: also the peer (relative to the rank) and the
        /// message size class.
        #[arg(long, default_value = "low", value_parser = ["low", "high"])]
        detail: String,
        /// `fold` (linear-time loop folding) or `seed` (seed 003's runs and digrams).
        #[arg(long, default_value = "fold", value_parser = ["fold", "seed"])]
        algorithm: String,
        /// Print JSON (the tree with per-position statistics) instead of text.
        #[arg(long)]
        json: bool,
        /// Instead, save the structural form that `mpiscope replay FILE` replays: per rank
        /// the loop tree, every distinct call with all its recorded arguments, mean times.
        /// JSON, gzip-compressed when FILE ends in `.gz`.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["rank", "json"])]
        save: Option<PathBuf>,
        /// Replace an existing output file that mpiscope did not write (never a
        /// directory, a symbolic link or a special file).
        #[arg(long)]
        force: bool,
    },
}

/// Says on stderr which ranks' records end early, and where (partial input is always
/// announced); returns the state for JSON outputs.
fn announce_input(run: &mpiscope_trace::RunDir) -> mpiscope_analyze::ending::InputState {
    let state = mpiscope_analyze::ending::skim(run);
    for w in state.warnings(8) {
        eprintln!("mpiscope: warning: {w}");
    }
    state
}

/// `value` with the input state under the key `input`.
fn with_input(
    value: impl serde::Serialize,
    input: &mpiscope_analyze::ending::InputState,
) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(value)?;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("input".into(), serde_json::to_value(input)?);
    }
    Ok(v)
}

fn open_run(dir: &PathBuf) -> Result<mpiscope_trace::RunDir> {
    mpiscope_trace::RunDir::open(dir)
        .with_context(|| format!("cannot open the trace {}", dir.display()))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn main() {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiscope: error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Trace(args) => launch::trace(args),
        Command::Replay(args) => replay::replay(args),
        Command::Hpl(args) => hpl::hpl(args),
        Command::Overlap(args) => overlap::overlap(args),
        Command::Bench(args) => bench::bench(args),
        Command::Calibrate(args) => calibrate::calibrate(args),
        Command::DgemmWorker { m, n, k, seconds } => {
            mpiscope_kernels::dgemm_worker((m, n, k), seconds)?;
            Ok(0)
        }
        Command::Plan(args) => plan::plan(args),
        Command::Dump {
            dir,
            rank,
            limit,
            symbols,
            defs,
        } => {
            let run = open_run(&dir)?;
            let opts = mpiscope_analyze::dump::DumpOptions {
                rank,
                limit,
                symbols,
                definitions: defs,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            match mpiscope_analyze::dump::dump(&run, &opts, &mut out) {
                Err(mpiscope_analyze::AnalyzeError::Write(e))
                    if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r?,
            }
            Ok(0)
        }
        Command::Export {
            dir,
            format,
            output,
            flops,
            min_compute_ns,
            force,
        } => {
            let run = open_run(&dir)?;
            announce_input(&run);
            match format.as_str() {
                "simgrid-ti" => {
                    let opts = mpiscope_export::TiOptions {
                        host_speed_flops: flops,
                        min_compute_ns,
                        force,
                    };
                    let s = mpiscope_export::export_simgrid_ti(&run, &output, &opts)?;
                    eprintln!(
                        "mpiscope: wrote {} actions for {} ranks to {} (replay: smpirun -replay {}/index.txt ...)",
                        s.actions,
                        s.ranks,
                        output.display(),
                        output.display()
                    );
                    for note in &s.skipped {
                        eprintln!("mpiscope: note: {note}");
                    }
                    Ok(0)
                }
                "chrome" => {
                    let s = mpiscope_export::export_chrome(&run, &output, force)?;
                    eprintln!(
                        "mpiscope: wrote {} calls and {} messages ({} received) of {} ranks to {} (open in https://ui.perfetto.dev)",
                        s.calls,
                        s.sends,
                        s.receives,
                        s.ranks,
                        output.display()
                    );
                    Ok(0)
                }
                "otf2" => {
                    let s = mpiscope_export::export_otf2(&run, &output, force)?;
                    eprintln!(
                        "mpiscope: wrote {} events ({} sends, {} receives) of {} ranks, {} locations to {}/traces.otf2",
                        s.events,
                        s.sends,
                        s.receives,
                        s.ranks,
                        s.locations,
                        output.display()
                    );
                    Ok(0)
                }
                "paraver" => {
                    let s = mpiscope_export::export_paraver(&run, &output, force)?;
                    eprintln!(
                        "mpiscope: wrote {} records ({} communications) of {} ranks to {}.prv/.pcf/.row",
                        s.records,
                        s.communications,
                        s.ranks,
                        output.display()
                    );
                    Ok(0)
                }
                other => {
                    anyhow::bail!(
                        "--format {other}: supported formats: simgrid-ti, chrome, paraver"
                    )
                }
            }
        }
        Command::Compare {
            dirs,
            json,
            html,
            force,
        } => {
            if let Some(out) = &html {
                // Judged before the work, so a refused output costs nothing.
                mpiscope_files::check_output(out, &outputs::HTML_REPORT, force)?;
            }
            let mut runs = Vec::new();
            for d in &dirs {
                let run = open_run(d)?;
                for w in mpiscope_analyze::ending::skim(&run).warnings(8) {
                    eprintln!("mpiscope: warning: {}: {w}", d.display());
                }
                runs.push((
                    d.display().to_string(),
                    mpiscope_analyze::profile::profile(&run)?,
                ));
            }
            let c = mpiscope_analyze::compare::compare(&runs);
            if let Some(out) = &html {
                let page = mpiscope_analyze::html::scaling("mpiscope compare: scaling", &c);
                outputs::write(out, &outputs::HTML_REPORT, force, page.as_bytes())?;
            }
            let text = if json {
                serde_json::to_string_pretty(&c)? + "\n"
            } else {
                c.to_text()
            };
            write_stdout(&text)?;
            Ok(0)
        }
        Command::Structure {
            dir,
            rank,
            detail,
            algorithm,
            json,
            save,
            force,
        } => {
            use mpiscope_analyze::structure::{structure, Algorithm, Detail};
            if let Some(out) = &save {
                mpiscope_files::check_output(out, &outputs::STRUCTURAL_FORM, force)?;
            }
            let run = open_run(&dir)?;
            let input = announce_input(&run);
            if let Some(out) = save {
                let form = mpiscope_sim::workload::structural::save(&run)?;
                let bytes = mpiscope_sim::workload::structural::write_file(&form, &out)?;
                eprintln!(
                    "mpiscope: structural form of {} rank(s) in {} ({bytes} bytes)",
                    form.ranks.len(),
                    out.display(),
                );
                return Ok(0);
            }
            if let Some(r) = rank {
                anyhow::ensure!(
                    r < run.ranks(),
                    "--rank {r}: the run has ranks 0 to {}",
                    run.ranks().saturating_sub(1)
                );
            }
            let only = rank.map(|r| vec![r]);
            let detail = if detail == "high" {
                Detail::High
            } else {
                Detail::Low
            };
            let algorithm = if algorithm == "seed" {
                Algorithm::Seed
            } else {
                Algorithm::Fold
            };
            let s = structure(&run, only.as_deref(), detail, algorithm)?;
            let text = if json {
                serde_json::to_string_pretty(&with_input(&s, &input)?)? + "\n"
            } else {
                s.to_text()
            };
            write_stdout(&text)?;
            Ok(0)
        }
        Command::Report {
            dir,
            json,
            window,
            html,
            ranks_per_node,
            force,
        } => {
            if let Some(out) = &html {
                mpiscope_files::check_output(out, &outputs::HTML_REPORT, force)?;
            }
            let run = open_run(&dir)?;
            let window = match window {
                Some(w) => mpiscope_analyze::profile::Window::parse(&w)
                    .map_err(|e| anyhow::anyhow!("--window: {e}"))?,
                None => mpiscope_analyze::profile::Window::ALL,
            };
            let options = mpiscope_analyze::report::ReportOptions {
                window,
                ranks_per_node,
            };
            let p = mpiscope_analyze::report::report(&run, &options)?;
            if let Some(out) = &html {
                use mpiscope_analyze::structure::{structure, Algorithm, Detail};
                let s = structure(&run, None, Detail::Low, Algorithm::Fold)?;
                let timeline = mpiscope_analyze::html::timeline_of_main_part(&run)?;
                let title = format!("mpiscope report: {}", dir.display());
                let page = mpiscope_analyze::html::report(&title, &p, Some(&s), timeline.as_ref());
                outputs::write(out, &outputs::HTML_REPORT, force, page.as_bytes())?;
            }
            let text = if json {
                serde_json::to_string_pretty(&p)? + "\n"
            } else {
                p.to_text()
            };
            write_stdout(&text)?;
            Ok(0)
        }
    }
}
