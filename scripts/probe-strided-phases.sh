#!/usr/bin/env bash
# Whether this machine's strided copy rate has phases (docs/BENCHMARKS.md, "Joint packs"):
# compiles scripts/probes/strided-phases.c with mpicc and launches it ROUNDS times on 2
# bound ranks, VECTOR SEND's layout (4 KiB blocks every 8 KiB, 4 MB) and an HPL-like panel
# (columns of 15,488 bytes every 16,000), one line per launch. On this VM whole launches
# give 2.0-2.1 GB/s for minutes, then 5-7 GB/s.
# Usage: scripts/probe-strided-phases.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/probes
mpicc -O2 -o target/probes/strided-phases scripts/probes/strided-phases.c
for _ in $(seq "${1:-6}"); do
  for layout in "4096 8192 4194304" "15488 16000 1982464"; do
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 \
      target/probes/strided-phases $layout
  done
done
