#!/usr/bin/env bash
# T-NBC overlap at 2 ranks (Open MPI): MPI_Alltoall of BYTES per peer followed by a sleeping
# computation; blocking Alltoall vs T-NBC (same binary, libmpiscope_overlap_openmpi.so
# preloaded) vs MPI_Ialltoall + MPI_Wait, side by side in one run, RUNS times each.
# Usage: scripts/bench-overlap.sh [BYTES=1048576] [SLEEP_US=20000] [REPS=20] [RUNS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${1:-1048576}; SLEEP=${2:-20000}; REPS=${3:-20}; RUNS=${4:-3}
cargo build --release -q -p mpiscope-overlap-openmpi
LIB=$PWD/target/release/libmpiscope_overlap_openmpi.so
EXE=target/release/overlap_alltoall
mpicc.openmpi -O2 -o "$EXE" bench/overlap_alltoall.c
MPIRUN=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl self,vader -np 2)
for run in $(seq "$RUNS"); do
  echo "run $run blocking $("${MPIRUN[@]}" "$EXE" blocking "$BYTES" "$SLEEP" "$REPS")"
  echo "run $run t-nbc    $("${MPIRUN[@]}" -x LD_PRELOAD="$LIB" "$EXE" blocking "$BYTES" "$SLEEP" "$REPS")"
  echo "run $run ialltoall $("${MPIRUN[@]}" "$EXE" ialltoall "$BYTES" "$SLEEP" "$REPS")"
done
