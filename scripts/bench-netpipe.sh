#!/usr/bin/env bash
# mpiscope-bench against NetPIPE (issue: Measure, "Agreement with an independent benchmark").
#
# Interleaves, ROUNDS times, NetPIPE's MPI ping-pong (Debian netpipe-openmpi, NPopenmpi, one
# pass 8 B .. 4 MiB) and mpiscope-bench's SEND & RECV at 8 B, 64 KiB and 4 MiB on 2 ranks of
# this host, and prints per size the median half round trip of each and their difference.
# mpiscope-bench runs REPS round trips per timed sample (`--reps`), as NetPIPE times
# back-to-back repetitions; REPS=1 is MPITEST's method. NetPIPE by default sends from the
# buffer it receives into; ours is measured both ways (separate buffers, and `--one-buffer`
# as NetPIPE does), since at 64 KiB that alone changes the time by about 2x here.
# Usage: scripts/bench-netpipe.sh [ROUNDS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
REPS=${2:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! command -v NPopenmpi >/dev/null; then
  echo "NPopenmpi not found: apt-get install netpipe-openmpi" >&2
  exit 1
fi
cargo build --release -q -p mpiscope-bench
out=target/bench-netpipe
mkdir -p "$out"
: > "$out/samples.txt"
launch="mpirun --allow-run-as-root -np 2"
for r in $(seq "$ROUNDS"); do
  $launch NPopenmpi -l 8 -u 4194304 -p 0 -o "$out/np.out" > /dev/null 2>&1
  for b in 8 65536 4194304; do
    np=$(awk -v b="$b" '$1 == b {printf "%.3f", $3 * 1e6}' "$out/np.out")
    bench() {
      $launch target/release/mpiscope-bench --bytes --min "$b" --max "$b" --only send_recv \
        --long-iters 200 --reps "$REPS" --csv "$@" | awk -F, 'NR == 2 {printf "%.3f", $7 / 2 * 1e6}'
    }
    ours=$(bench)
    one=$(bench --one-buffer)
    echo "$b $np $ours $one" >> "$out/samples.txt"
    echo "round $r: $b bytes: NetPIPE $np us, mpiscope-bench $ours us, one buffer $one us (half round trip)" >&2
  done
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%10s %14s %14s %8s %18s %8s\n" bytes "NetPIPE (us)" "ours (us)" "diff" "ours, one buffer" "diff"
for b in 8 65536 4194304; do
  np=$(awk -v b="$b" '$1 == b {print $2}' "$out/samples.txt" | median)
  ours=$(awk -v b="$b" '$1 == b {print $3}' "$out/samples.txt" | median)
  one=$(awk -v b="$b" '$1 == b {print $4}' "$out/samples.txt" | median)
  awk -v b="$b" -v n="$np" -v o="$ours" -v u="$one" 'BEGIN {printf "%10d %14.3f %14.3f %+7.1f%% %18.3f %+7.1f%%\n", b, n, o, (o - n) / n * 100, u, (u - n) / n * 100}'
done
