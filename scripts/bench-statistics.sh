#!/usr/bin/env bash
# Statistics throughput (issue: Understand, ">= 20 M events/s per core"): the statistics pass
# of `mpiscope report` (`profile`, all ranks in parallel) timed on its own in CPU time by
# `crates/analyze/examples/report_passes.rs`, on two traced programs:
#   1. Debian's hpcc at 4 ranks (HPL N=800, PTRANS, FFT, ...; MPI_Iprobe sampled 1 in 1000),
#      the input of crates/cli/tests/cli/record_misc/hpcc.rs: about 4.3 M events, 10 bytes each;
#   2. tests/programs/npb/halo.c, 200,000 iterations at 4 ranks: 4.1 M events, 30 bytes each
#      (every MPI_Waitall carries request and completion lists).
# Then the whole `mpiscope report --json` on the hpcc trace (process start, every pass).
# Usage: scripts/bench-statistics.sh [REPEATS=10]
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-10}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release -q -p mpiscope -p mpiscope-preload-openmpi
cargo build --release -q -p mpiscope-analyze --example report_passes
M=target/release/mpiscope
out=target/bench-statistics
rm -rf "$out" && mkdir -p "$out/hpcc"
# The hpcc input of the record tests.
python3 - "$out/hpcc/hpccinf.txt" <<'PY'
import sys
s = open("crates/cli/tests/cli/record_misc/hpcc.rs").read()
start = s.index('const HPCC_INPUT: &str = "\\\n') + len('const HPCC_INPUT: &str = "\\\n')
open(sys.argv[1], "w").write(s[start:s.index('";', start)])
PY
(cd "$out/hpcc" && "../../../$M" trace --force -o ../hpcc-trace --sample MPI_Iprobe=1000 -- \
  mpirun --allow-run-as-root --oversubscribe -np 4 --mca mpi_yield_when_idle 1 /usr/bin/hpcc) 2>&1 | tail -1
mpicc -O2 -o "$out/halo" tests/programs/npb/halo.c
$M trace --force -o "$out/halo-trace" -- mpirun --allow-run-as-root --oversubscribe -np 4 \
  --mca mpi_yield_when_idle 1 "$out/halo" 200000 10 2>&1 | tail -1
for t in hpcc-trace halo-trace; do
  echo "== $t: statistics pass alone, $REPS repeats"
  target/release/examples/report_passes "$out/$t" "$REPS" profile
done
echo "== mpiscope report --json on hpcc-trace, 3 runs (wall, CPU)"
for i in 1 2 3; do
  /usr/bin/time -f "%e s wall %U+%S s CPU %M KB" $M report "$out/hpcc-trace" --json > /dev/null
done
