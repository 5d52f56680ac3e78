#!/usr/bin/env bash
# A strided message between ranks whose cores compute for other ranks (docs/BENCHMARKS.md,
# "Bound ranks, strided panels"): compiles scripts/probes/oversubscribed-transfer.c with
# mpicc and runs it on 4 ranks bound 2 per core, the other ranks idle, then computing.
# Usage: scripts/probe-oversubscribed-transfer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/probes
mpicc -O2 -o target/probes/oversubscribed-transfer scripts/probes/oversubscribed-transfer.c
for busy in 0 1; do
  mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 \
    --bind-to core:overload-allowed --map-by core -np 4 \
    target/probes/oversubscribed-transfer "$busy"
done
