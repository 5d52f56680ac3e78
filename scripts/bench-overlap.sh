#!/usr/bin/env bash
# T-NBC overlap benchmark ([Li 2010], Table 1), the numbers of docs/BENCHMARKS.md: MPI_Alltoall
# followed by computation, blocking vs T-NBC vs MPI_Ialltoall + MPI_Wait side by side, through
# `mpiscope overlap bench` (which compiles bench/overlap_alltoall.c with the MPI's mpicc).
#   1. the five scenarios at 1 MiB per peer, computation asleep (no CPU contention), Open MPI;
#   2. the same under MPICH;
#   3. scenario a (computation unrelated to the data) from 64 KiB to 1 MiB per peer;
#   4. scenario a with the computation spinning on the CPU (2 ranks on 2 cores).
# Usage: scripts/bench-overlap.sh [REPS=20] [RANKS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-20}; RANKS=${2:-2}
cargo build --release -q -p mpiscope -p mpiscope-overlap-openmpi -p mpiscope-overlap-mpich
M=target/release/mpiscope
echo "## 1. Open MPI, 1 MiB per peer, sleep"
$M overlap bench --bytes 1048576 --ranks "$RANKS" --reps "$REPS" --kind sleep
echo; echo "## 2. MPICH, 1 MiB per peer, sleep"
$M overlap bench --flavour mpich --bytes 1048576 --ranks "$RANKS" --reps "$REPS" --kind sleep
for b in 65536 262144 1048576; do
  echo; echo "## 3. Open MPI, scenario a, $b bytes per peer, sleep"
  $M overlap bench --bytes "$b" --ranks "$RANKS" --reps "$REPS" --kind sleep --scenarios a | tail -3
done
echo; echo "## 4. Open MPI, scenario a, 1 MiB per peer, spin"
$M overlap bench --bytes 1048576 --ranks "$RANKS" --reps "$REPS" --kind spin --scenarios a | tail -3
