#!/usr/bin/env bash
# Structure discovery (issue: Understand): folding throughput on synthetic sequences of 1M
# and 10M symbols (linear time), then a traced 10,000-iteration halo exchange on 4 ranks:
# trace size against the size of its structural form (`mpiscope structure --json`), and the
# time of `mpiscope structure` and `mpiscope report` on it.
# Usage: scripts/bench-structure.sh [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-10000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo bench -q -p mpiscope-structure --bench fold
cargo build --release -q -p mpiscope -p mpiscope-preload-openmpi
out=target/bench-structure
rm -rf "$out" && mkdir -p "$out"
mpicc -g -O1 -o "$out/halo" tests/programs/npb/halo.c
target/release/mpiscope trace --force -o "$out/run" -- mpirun --allow-run-as-root --oversubscribe -np 4 \
  --mca mpi_yield_when_idle 1 "$out/halo" "$ITERS" 10
events=$(target/release/mpiscope report "$out/run" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
raw=$(du -sb "$out/run" | cut -f1)
t0=$(date +%s.%N)
target/release/mpiscope structure "$out/run" --json > "$out/structure.json"
t1=$(date +%s.%N)
target/release/mpiscope report "$out/run" > /dev/null
t2=$(date +%s.%N)
target/release/mpiscope structure "$out/run" | head -12
form=$(stat -c %s "$out/structure.json")
gz=$(gzip -9 -c "$out/structure.json" | wc -c)
awk -v e="$events" -v r="$raw" -v f="$form" -v g="$gz" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
  printf "events %d; trace %d bytes; structural form %d bytes (%.0fx smaller), gzipped %d bytes (%.0fx)\n", e, r, f, r / f, g, r / g
  printf "mpiscope structure: %.3f s (%.2f M events/s); mpiscope report: %.3f s (%.2f M events/s)\n", b - a, e / (b - a) / 1e6, c - b, e / (c - b) / 1e6
}'
# The replayable structural form (`structure --save`), plain and gzip-compressed, and its
# replay against the trace's on a 16-host cluster.
target/release/mpiscope structure "$out/run" --save "$out/replayable.json" 2>/dev/null
target/release/mpiscope structure "$out/run" --save "$out/replayable.json.gz" 2>/dev/null
plain=$(stat -c %s "$out/replayable.json"); packed=$(stat -c %s "$out/replayable.json.gz")
awk -v r="$raw" -v p="$plain" -v z="$packed" 'BEGIN {
  printf "replayable form: %d bytes (%.0fx smaller than the trace); .json.gz: %d bytes (%.0fx)\n", p, r / p, z, r / z }'
for x in "$out/run" "$out/replayable.json.gz"; do
  target/release/mpiscope replay "$x" --platform examples/platforms/cluster-16.xml --json --quiet |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], "makespan_s", d["makespan_s"], "messages", d["messages"])' "$x"
done
