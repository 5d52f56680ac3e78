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

# The SLURM tests (crates/cli/tests/cli/slurm.rs) start a one-machine SLURM with scripts/slurm.sh
# and stop it themselves; should the test run die first, it is stopped here (unless it was up
# before this script started).
if ./scripts/slurm.sh status >/dev/null 2>&1; then
  slurm_was_up=1
else
  slurm_was_up=0
fi
stop_slurm() {
  if [ "$slurm_was_up" = 0 ]; then ./scripts/slurm.sh down >/dev/null 2>&1 || true; fi
}
trap stop_slurm EXIT

cargo fmt --all -- --check
cargo build --workspace --release --all-targets
cargo clippy --workspace --release --all-targets -- -D warnings
cargo test --workspace --release --no-fail-fast -- --test-threads=2

# Time-boxed fuzzing of every parser of outside input (skipped, with a note, where
# cargo-fuzz cannot be installed).
./scripts/fuzz.sh 40
