//! `mpiscope-bench`: MPITEST, the benchmark of basic MPI operations ([MPITEST]).
//!
//! Run it under `mpirun`: `mpirun -np 4 mpiscope-bench m1 M100 K10 T100 t100000 R2
//! otransfer.dat` (MPITEST's syntax) or with long options (`--help`). Rank 0 writes the
//! table (or `--json` / `--csv`) to the file given by `o` / `--output`, else to stdout.
//!
//! Modules: [`params`] (command line), [`run`] (the sweep of operations and lengths, with
//! MPI), [`method`] (MPITEST's timing scheme, MPI-free), [`stats`] (median and its
//! confidence interval), [`ops`] (the operations with MPI), [`report`] (output). This file
//! only starts MPI, reads the parameters and ends with the run's exit code.

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
    let code = match run::run(&world, &params) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpiscope-bench: rank {me}: {e:#}");
            world.abort(2)
        }
    };
    drop(universe);
    std::process::exit(code);
}
