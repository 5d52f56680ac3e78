//! Integration tests of the exporters, one binary with a module per topic (one link
//! instead of three). Pick a topic with a filter:
//! `cargo test -p mpiscope-export --test export -- ti_format::`.
//!
//! `ti_replay` and `ti_real_trace` need SimGrid (and `ti_real_trace` Open MPI and the
//! recorder); `ti_format` needs nothing outside the workspace. The C programs the tests
//! run live in `crates/export/tests/programs/`.

mod common;

mod ti_format;
mod ti_real_trace;
mod ti_replay;
