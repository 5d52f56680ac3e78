//! The `mpiscope` command line: a thin shell over the mpiscope libraries.

mod launch;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mpiscope", version, about = "Record, understand and predict MPI programs", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

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
    /// Per-function counts, times and bytes; per-rank compute versus MPI time.
    Report {
        /// Run directory written by `mpiscope trace`.
        dir: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
}

fn open_run(dir: &PathBuf) -> Result<mpiscope_trace::RunDir> {
    mpiscope_trace::RunDir::open(dir).with_context(|| format!("cannot open the trace {}", dir.display()))
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
        Command::Dump { dir, rank, limit, symbols, defs } => {
            let run = open_run(&dir)?;
            let opts = mpiscope_analyze::dump::DumpOptions { rank, limit, symbols, definitions: defs };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            match mpiscope_analyze::dump::dump(&run, &opts, &mut out) {
                Err(mpiscope_analyze::AnalyzeError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r?,
            }
            Ok(0)
        }
        Command::Report { dir, json } => {
            let run = open_run(&dir)?;
            let p = mpiscope_analyze::profile::profile(&run)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&p)?);
            } else {
                print!("{}", p.to_text());
            }
            Ok(0)
        }
    }
}
