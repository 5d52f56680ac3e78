#!/usr/bin/env bash
# Recorder cost in instructions (valgrind --tool=callgrind): unlike times, instruction counts
# do not depend on what else the shared machine is doing. Counts the instructions executed per
# MPI_Iprobe call by the recorder (our code: the wrapper, the encoder) and by Open MPI.
# Usage: scripts/bench-record-instructions.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${1:-200000}
out=target/bench-record
mkdir -p "$out"
cargo build --release -q -p mpiscope-preload-openmpi
mpicc -O2 -o "$out/iprobe_loop" bench/iprobe_loop.c
rm -rf "$out/cg-trace"
MPISCOPE_DIR="$out/cg-trace" OMPI_MCA_btl=self LD_PRELOAD="$PWD/target/release/libmpiscope_preload_openmpi.so" \
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$out/iprobe_loop" "$CALLS" 1 >/dev/null 2>&1
callgrind_annotate "$out/callgrind.out" 2>/dev/null | awk -v n="$CALLS" '
  /^ *[0-9,]+ / {
    v=$1; gsub(",", "", v)
    if ($0 ~ /crates\/(preload|trace)|wrappers\.rs|core\/src\/sync\/atomic/) ours += v
    else if ($0 ~ /openmpi|libmpi|libopen-pal|mca_/) mpi += v
  }
  END {
    printf "instructions per MPI_Iprobe call (%d calls):\n", n
    printf "  mpiscope (wrapper + encoder)  %6.0f\n", ours / n
    printf "  Open MPI (PMPI_Iprobe)        %6.0f\n", mpi / n
  }'
