//! `mpiscope-bench`: MPITEST, the benchmark of basic MPI operations ([MPITEST]).
//!
//! Run it under `mpirun`: `mpirun -np 4 mpiscope-bench m1 M100 K10 T100 t100000 R2
//! otransfer.dat` (MPITEST's syntax) or with long options (`--help`). Rank 0 writes the
//! table (or `--json` / `--csv`) to the file given by `o` / `--output`, else to stdout.
//!
//! Modules: [`params`] (command line), [`run`] (the sweep of operations and lengths, with
//! MPI), [`method`] (MPITEST's timing scheme, MPI-free), [`stats`] (median and its
//! confidence interval), [`ops`] (the operations with MPI), [`report`] (output). This file
//! only starts MPI, reads the parameters and ends with the run's exit code: 0, 2 for a
//! command line that does not parse (as clap says), 1 for an error while running.

mod method;
mod ops;
mod params;
mod report;
mod run;
mod stats;

use mpi::topology::Communicator;

use params::Params;

fn main() {
    let Some(universe) = mpi::initialize() else {
        eprintln!("mpiscope-bench: MPI is already initialized");
        std::process::exit(1);
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
    let code = match run::run(&world, &params) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiscope-bench: rank {me}: {e:#}");
            world.abort(1)
        }
    };
    drop(universe);
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn version_and_help_are_not_errors_and_usage_errors_exit_2() {
        let e = Params::from_args(args("mpiscope-bench --version")).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
        assert!(!e.use_stderr());
        assert!(e.to_string().contains(env!("CARGO_PKG_VERSION")));
        // After seed-syntax arguments too.
        let e = Params::from_args(args("mpiscope-bench m1 M4 --version")).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
        let e = Params::from_args(args("mpiscope-bench --frobnicate")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
