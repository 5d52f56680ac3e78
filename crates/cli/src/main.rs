//! The `mpiscope` command line: a thin shell over the mpiscope libraries.
//!
//! This file declares the commands and dispatches to them; each command lives in a module
//! of its own (its options as a clap `Args` struct, and the function that runs it), and
//! options several commands share are defined once (`simflags.rs`: the simulation flags).
//! Helpers: `inputs.rs` (checks and warnings about inputs), `outputs.rs` (the files and text
//! the commands write), `launch.rs`, `child.rs`, `recorder.rs` and `trace_dir.rs` (running
//! a program under the recorder), `meta.rs` (shell completions, man pages and the table of
//! docs/CLI.md, all from the command tree declared here).
//!
//! Exit codes: a command returns its own (0, or `trace`'s and `overlap`'s the program's:
//! 128 + N when signal N ended it); a command line that does not parse (an unknown option, a
//! value outside a closed list or range) is a usage error, 2, printed by clap; any error
//! found while running (a missing or malformed input, an option the input does not fit) is
//! printed once as `mpiscope: error: ...` and exits with 1.

mod batch;
mod bench;
mod calibrate;
mod child;
mod compare;
mod dump;
mod export;
mod hpl;
mod inputs;
mod launch;
mod meta;
mod outputs;
mod overlap;
mod phaseflags;
mod plan;
mod recorder;
mod replay;
mod report;
mod simflags;
mod structure;
mod trace_dir;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Exit code of an error found while running a command (usage errors exit with clap's 2).
const EXIT_ERROR: i32 = 1;

/// The command line: one of the commands.
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
    Dump(dump::DumpArgs),
    /// Convert a trace for another tool: `--format simgrid-ti` writes SimGrid
    /// time-independent traces for `smpirun -replay OUT/index.txt`; `chrome` one JSON file
    /// for Perfetto (calls and message arrows); `paraver` OUT.prv, OUT.pcf and OUT.row;
    /// `otf2` the archive OUT/traces.otf2 (Vampir, Scalasca).
    Export(export::ExportArgs),
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
    DgemmWorker(calibrate::DgemmWorkerArgs),
    /// Run a capacity-planning study: `mpiscope plan STUDY.toml` sweeps node speed, link
    /// bandwidth and latency, topologies or mappings over a workload and writes
    /// results.csv, results.json and SVG figures (resumable; shares points under mpirun).
    Plan(plan::PlanArgs),
    /// Per-function counts, times and bytes; per-rank compute versus MPI time.
    Report(report::ReportArgs),
    /// Runs of one program side by side (scaling): wall time, MPI share, compute bursts
    /// (mean, harmonic mean), calls per rank and bytes per call of each function.
    Compare(compare::CompareArgs),
    /// The program's loop structure, recovered by lossless compression of each rank's
    /// calls and compute bursts: nested loops with iteration counts, mean times and
    /// totals, ranks with the same structure grouped.
    Structure(structure::StructureArgs),
    /// Print a shell completion script: `mpiscope completions bash > /etc/bash_completion.d/mpiscope`.
    Completions(meta::CompletionsArgs),
    /// Write a man page for `mpiscope` and each of its commands into DIR (default: the
    /// current directory): `mpiscope man /usr/local/share/man/man1`.
    Man(meta::ManArgs),
}

fn main() {
    let cli = Cli::parse_from(overlap::spell_np(std::env::args_os().collect()));
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiscope: error: {}", error_text(&e));
            EXIT_ERROR
        }
    };
    std::process::exit(code);
}

/// The error and its causes, `: `-separated as anyhow's `{:#}`, each said once: a cause
/// whose text its context already holds (an OS error a library put in its message and also
/// gives as the source) is not repeated.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}

/// Runs the command; its exit code.
fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Trace(args) => launch::trace(args),
        Command::Dump(args) => dump::dump(args),
        Command::Export(args) => export::export(args),
        Command::Replay(args) => replay::replay(args),
        Command::Hpl(args) => hpl::hpl(args),
        Command::Overlap(args) => overlap::overlap(args),
        Command::Bench(args) => bench::bench(args),
        Command::Calibrate(args) => calibrate::calibrate(args),
        Command::DgemmWorker(args) => calibrate::dgemm_worker(args),
        Command::Plan(args) => plan::plan(args),
        Command::Report(args) => report::report(args),
        Command::Compare(args) => compare::compare(args),
        Command::Structure(args) => structure::structure(args),
        Command::Completions(args) => meta::completions(args),
        Command::Man(args) => meta::man(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_each_cause_once() {
        let os = std::io::Error::from_raw_os_error(2);
        let inner = anyhow::Error::new(std::io::Error::from_raw_os_error(2))
            .context(format!("/x: cannot read: {os}"));
        let e = inner.context("cannot open the trace /x");
        let t = error_text(&e);
        assert_eq!(t.matches("os error 2").count(), 1, "{t}");
        assert!(
            t.starts_with("cannot open the trace /x: /x: cannot read: "),
            "{t}"
        );
        let plain = anyhow::anyhow!("leaf").context("outer");
        assert_eq!(error_text(&plain), "outer: leaf");
    }

    #[test]
    fn usage_errors_are_clap_errors_with_code_2() {
        let e = Cli::try_parse_from(["mpiscope", "dump"]).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        let e = Cli::try_parse_from(["mpiscope", "frobnicate"])
            .err()
            .unwrap();
        assert_eq!(e.exit_code(), 2);
        assert_ne!(EXIT_ERROR, e.exit_code());
    }
}
