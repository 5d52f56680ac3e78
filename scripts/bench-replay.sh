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
# TOPO=star replays the same trace on a star whose centre is shared: the same cluster with
# a backbone (BB_BW, default 100Gbps, and 1 us) that every message crosses, so the max-min
# solver sees one component holding every flow in flight (TOPO=flat, the default: private
# links only, one small component per neighbourhood). The synthetic run is skipped then.
#
# Usage: [TOPO=flat|star] [BB_BW=100Gbps] scripts/bench-replay.sh [RANKS] [ITERS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${1:-1024}
ITERS=${2:-100}
REPEATS=${3:-3}
SG_REPEATS=${SG_REPEATS:-1}
SYNTH_RANKS=${SYNTH_RANKS:-65536}
SYNTH_ITERS=${SYNTH_ITERS:-10}
TOPO=${TOPO:-flat}
BB_BW=${BB_BW:-100Gbps}
case $TOPO in
  flat) backbone="" ;;
  star) backbone=" bb_bw=\"$BB_BW\" bb_lat=\"1us\"" SYNTH_RANKS=0 ;;
  *) echo "TOPO=$TOPO: expected flat or star" >&2 && exit 2 ;;
esac
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
platform=platform-$TOPO.xml
cat > "$out/$platform" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-$((RANKS - 1))" speed="1Gf" bw="10Gbps" lat="2us"$backbone/></zone></platform>
EOF
seq 0 $((RANKS - 1)) | sed 's/^/n/' > "$out/hostfile"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # runs "$@" under /usr/bin/time; appends "wall user maxrss_kb" to $timing
  /usr/bin/time -f "%e %U %M" -o "$out/time.txt" "$@"
  cat "$out/time.txt" >> "$timing"
}

timing=$out/ours-$TOPO.txt
: > "$timing"
for r in $(seq "$REPEATS"); do
  timed target/release/mpiscope replay "$out/index.txt" --platform "$out/$platform" \
    --hostfile "$out/hostfile" --json > "$out/ours-$TOPO.json"
  echo "mpiscope run $r: $(tail -1 "$timing") (wall s, user s, max RSS KiB)" >&2
done
ours=$(sed -n 's/.*"makespan_s": *\([0-9.eE+-]*\).*/\1/p' "$out/ours-$TOPO.json" | head -1)
ours_wall=$(awk '{print $1}' "$timing" | median)
ours_cpu=$(awk '{print $2}' "$timing" | median)
ours_rss=$(awk '{print $3}' "$timing" | median)
echo "trace: $RANKS ranks, $actions actions, platform $TOPO ($out/$platform)"
echo "mpiscope: makespan $ours s; median wall $ours_wall s, CPU $ours_cpu s, RSS $((ours_rss / 1024)) MiB;" \
  "$(awk -v a="$actions" -v w="$ours_wall" -v c="$ours_cpu" 'BEGIN {printf "%.0f actions/s, %.0f per CPU s", a / w, a / c}')"

if [ "$SG_REPEATS" -gt 0 ]; then
  timing=$out/simgrid-$TOPO.txt
  : > "$timing"
  for r in $(seq "$SG_REPEATS"); do
    (cd "$out" && timed smpirun -replay index.txt -np "$RANKS" -platform "$platform" \
      -hostfile hostfile --cfg=network/model:CM02 --cfg=smpi/coll-selector:ompi \
      --log=smpi_replay.fmt:'[%.12d]%e%m%n' > "simgrid-$TOPO.log" 2>&1)
    echo "smpirun run $r: $(tail -1 "$timing") (wall s, user s, max RSS KiB)" >&2
  done
  sg=$(grep "Simulation time" "$out/simgrid-$TOPO.log" | tail -1 | sed 's/^\[\([0-9.]*\)\].*/\1/')
  sg_wall=$(awk '{print $1}' "$timing" | median)
  sg_cpu=$(awk '{print $2}' "$timing" | median)
  sg_rss=$(awk '{print $3}' "$timing" | median)
  echo "smpirun:  makespan $sg s; median wall $sg_wall s, CPU $sg_cpu s, RSS $((sg_rss / 1024)) MiB;" \
    "$(awk -v a="$actions" -v c="$sg_cpu" 'BEGIN {printf "%.0f actions per CPU s", a / c}')"
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
