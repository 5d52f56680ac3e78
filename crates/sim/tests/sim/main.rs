//! Integration tests of the simulator, one binary with a module per topic (one link
//! instead of three). Pick a topic with a filter:
//! `cargo test -p mpiscope-sim --test sim -- overflow::`.
//!
//! `overflow` and `threads` need nothing outside the workspace; `simgrid_diff` and
//! `smpi_options` (SMPI's per-call costs, one test per option) compare with SimGrid
//! (`smpirun`), the first meant for release builds:
//! `cargo test --release -p mpiscope-sim --test sim -- simgrid_diff::`. The C programs it
//! records live in `crates/sim/tests/programs/`; `common` holds what they share.

mod common;
mod cputime;
mod overflow;
mod simgrid_diff;
mod smpi_options;
mod threads;
