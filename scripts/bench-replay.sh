#!/usr/bin/env bash
# Replay speed and memory, side by side with SimGrid (issue: Predict, "Benchmark").
#
# Generates a SimGrid time-independent trace of RANKS ranks exchanging halos with their four
# neighbours on a 2-D grid for ITERS iterations (10 actions per rank and iteration: 4 irecv,
# 4 isend, waitall, compute; messages alternate 8 KiB eager and 96 KiB rendezvous), on a flat
# cluster of RANKS hosts (10 Gbps, 2 us, split-duplex private links). Then, in the same run:
#   * `mpiscope replay` REPEATS times (median wall time, CPU time, peak RSS);
#   * `smpirun -replay` SG_REPEATS times with the same model (CM02, ompi selector);
# and prints both makespans, their relative difference and the speed ratios. Finally a
# 65,536-rank synthetic replay (generated in memory, SYNTH_ITERS iterations) reports its peak
# memory. Set SG_REPEATS=0 to skip SimGrid, SYNTH_RANKS=0 to skip the synthetic run.
#
# Usage: scripts/bench-replay.sh [RANKS] [ITERS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${1:-1024}
ITERS=${2:-100}
REPEATS=${3:-3}
SG_REPEATS=${SG_REPEATS:-1}
SYNTH_RANKS=${SYNTH_RANKS:-65536}
SYNTH_ITERS=${SYNTH_ITERS:-10}
out=$(realpath -m "${BENCH_DIR:-target/bench-replay}")/r${RANKS}-i${ITERS}
mkdir -p "$out"

cargo build --release -q -p mpiscope
cargo bench -q -p mpiscope-sim --bench replay --no-run 2>/dev/null
bench() { cargo bench -q -p mpiscope-sim --bench replay -- "$@"; }

if [ ! -f "$out/index.txt" ]; then
  echo "generating $RANKS ranks x $ITERS iterations in $out" >&2
  bench gen "$out" "$RANKS" "$ITERS"
fi
actions=$(cat "$out"/rank-*.txt | wc -l)
cat > "$out/platform.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-$((RANKS - 1))" speed="1Gf" bw="10Gbps" lat="2us"/></zone></platform>
EOF
seq 0 $((RANKS - 1)) | sed 's/^/n/' > "$out/hostfile"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # runs "$@" under /usr/bin/time; appends "wall user maxrss_kb" to $timing
  /usr/bin/time -f "%e %U %M" -o "$out/time.txt" "$@"
  cat "$out/time.txt" >> "$timing"
}

timing=$out/ours.txt
: > "$timing"
for r in $(seq "$REPEATS"); do
  timed target/release/mpiscope replay "$out/index.txt" --platform "$out/platform.xml" \
    --hostfile "$out/hostfile" --json > "$out/ours.json"
  echo "mpiscope run $r: $(tail -1 "$timing") (wall s, user s, max RSS KiB)" >&2
done
ours=$(sed -n 's/.*"makespan_s": *\([0-9.eE+-]*\).*/\1/p' "$out/ours.json" | head -1)
ours_wall=$(awk '{print $1}' "$timing" | median)
ours_cpu=$(awk '{print $2}' "$timing" | median)
ours_rss=$(awk '{print $3}' "$timing" | median)
echo "trace: $RANKS ranks, $actions actions"
echo "mpiscope: makespan $ours s; median wall $ours_wall s, CPU $ours_cpu s, RSS $((ours_rss / 1024)) MiB;" \
  "$(awk -v a="$actions" -v w="$ours_wall" 'BEGIN {printf "%.0f actions/s", a / w}')"

if [ "$SG_REPEATS" -gt 0 ]; then
  timing=$out/simgrid.txt
  : > "$timing"
  for r in $(seq "$SG_REPEATS"); do
    (cd "$out" && timed smpirun -replay index.txt -np "$RANKS" -platform platform.xml \
      -hostfile hostfile --cfg=network/model:CM02 --cfg=smpi/coll-selector:ompi \
      --log=smpi_replay.fmt:'[%.12d]%e%m%n' > simgrid.log 2>&1)
    echo "smpirun run $r: $(tail -1 "$timing") (wall s, user s, max RSS KiB)" >&2
  done
  sg=$(grep "Simulation time" "$out/simgrid.log" | tail -1 | sed 's/^\[\([0-9.]*\)\].*/\1/')
  sg_wall=$(awk '{print $1}' "$timing" | median)
  sg_cpu=$(awk '{print $2}' "$timing" | median)
  sg_rss=$(awk '{print $3}' "$timing" | median)
  echo "smpirun:  makespan $sg s; median wall $sg_wall s, CPU $sg_cpu s, RSS $((sg_rss / 1024)) MiB"
  awk -v o="$ours" -v s="$sg" -v ow="$ours_wall" -v sw="$sg_wall" -v oc="$ours_cpu" -v sc="$sg_cpu" 'BEGIN {
    d = (o - s) / s * 100; if (d < 0) d = -d
    printf "makespan difference %.6f%%; speed-up %.1fx wall, %.1fx CPU\n", d, sw / ow, sc / oc }'
fi

if [ "$SYNTH_RANKS" -gt 0 ]; then
  synth=$out/synthetic.xml
  cat > "$synth" <<EOF
<?xml version='1.0'?>
<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-$((SYNTH_RANKS - 1))" speed="1Gf" bw="10Gbps" lat="2us"/></zone></platform>
EOF
  # The bench binary reports its own peak RSS (VmHWM), so cargo's memory is not counted.
  bench synthetic "$SYNTH_RANKS" "$SYNTH_ITERS" "$synth" | tee "$out/synthetic.log"
fi
