//! End-to-end tests of the `mpiscope` command with real `mpirun`, one binary with a module
//! per topic (one link instead of a dozen). Pick a topic with a filter:
//! `cargo test --release -p mpiscope --test cli -- faults::`.

mod common;

mod anywhere;
mod apps;
mod calibrate;
mod conventions;
mod corpus;
mod cputime;
mod exports;
mod faults;
mod hpl;
mod html;
mod matrix;
mod netlab;
mod outputs;
mod overlap;
mod phases;
mod plan;
mod record_c;
mod record_misc;
mod replay;
mod slurm;
mod structural_replay;
mod structure;
