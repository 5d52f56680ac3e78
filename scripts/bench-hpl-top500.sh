#!/usr/bin/env bash
# The issue's top500-scale targets (<= 15 min and <= 2 GB on one core each):
#   4096      HPL at 4,096 ranks (64 x 64), N = 4,000,000, NB = 256, on a 4,096-node
#             two-level fat tree (2;64,64;1,32;1,1);
#   stampede  Stampede's configuration, 6,006 ranks (77 x 78), N = 3,875,000, NB = 1,024, on a
#             6,084-node two-level fat tree (2;78,78;1,39;1,1).
# Hosts 10 Gf, cables 10 Gbps / 1 us, kernels at their flop counts; HPL's default algorithms
# (WR11C2R4: depth 1, 1ringM, Crout) but SWAP 0 (binary exchange: the spread-roll of SWAP 1
# or mix is P - 1 ring steps per update, Q x P(P-1) messages per panel); pivot exchanges
# aggregated (`--pivots aggregated`, within 1% of the message mode: docs/BENCHMARKS.md).
# Prints /usr/bin/time -v's CPU, wall and peak RSS, and the run's JSON.
# Usage: scripts/bench-hpl-top500.sh [4096] [stampede]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/hpl-dat.sh
cargo build --release -q -p mpiscope
bin=$PWD/target/release/mpiscope
dir=target/bench-hpl-top500
mkdir -p "$dir"
cd "$dir"
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(4096 stampede)
for c in "${configs[@]}"; do
  case $c in
    4096) topo="2;64,64;1,32;1,1" n=4000000 nb=256 p=64 q=64 ;;
    stampede) topo="2;78,78;1,39;1,1" n=3875000 nb=1024 p=77 q=78 ;;
    *) echo "unknown configuration $c (4096, stampede)" >&2; exit 2 ;;
  esac
  fat_tree_toml "$topo" > "ft-$c.toml"
  hpl_dat "$n" "$nb" "$p" "$q" | sed -e 's/^2            SWAP/0            SWAP/' > "hpl-$c.dat"
  /usr/bin/time -v "$bin" hpl "hpl-$c.dat" --platform "ft-$c.toml" --json > "out-$c.json" 2> "time-$c.txt"
  echo "$c: $(grep -E 'User time|System time|Elapsed|Maximum resident' "time-$c.txt" | tr -s ' \t' ' ' | tr '\n' ';')"
  tr -d ' \n' < "out-$c.json"; echo
done
