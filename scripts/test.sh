#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds every crate (both MPI flavours of the
# preload library), checks formatting and lints, and runs unit, property and end-to-end
# tests (the latter run real mpirun, Open MPI and MPICH, and real SimGrid).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh

export CARGO_TERM_COLOR=never
# Open MPI refuses to run as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

cargo fmt --all -- --check
cargo build --workspace --release --all-targets
cargo clippy --workspace --release --all-targets -- -D warnings
cargo test --workspace --release -- --test-threads=2

# Time-boxed fuzzing of every parser of outside input (skipped, with a note, where
# cargo-fuzz cannot be installed).
./scripts/fuzz.sh 40
