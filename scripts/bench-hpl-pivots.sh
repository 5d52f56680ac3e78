#!/usr/bin/env bash
# The aggregated pivot model against the message-by-message one (`mpiscope hpl --pivots`),
# on the configurations of scripts/bench-hpl.sh (fat tree of R hosts, 10 Gf, 10 Gbps / 1 us,
# P = Q = sqrt(R), N = 5000 sqrt(R), NB 128, HPL's default algorithms), plus SWAP 0 and
# BCAST 2ringM variants: simulated time of both, their difference, messages, and the
# simulation's wall and CPU time. With --polls, compares the update's probes instead
# (`mpiscope hpl --polls chunks` against `--polls aggregated`).
# Usage: scripts/bench-hpl-pivots.sh [--polls] [RANKS...]   (default 16 64 256)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/hpl-dat.sh
cargo build --release -q -p mpiscope
bin=$PWD/target/release/mpiscope
option=--pivots exact=messages
if [ "${1:-}" = --polls ]; then
  option=--polls exact=chunks
  shift
fi
dir=target/bench-hpl-pivots
mkdir -p "$dir"
cd "$dir"
printf '%-6s %-8s %-10s %-14s %-14s %-10s %-22s %-22s\n' ranks N variant "time ($exact)" "time (aggr)" diff "messages: $exact / aggr" "CPU s: $exact / aggr"
for r in "${@:-16 64 256}"; do
  case $r in
    4) topo="2;2,2;1,2;1,1" p=2 ;;
    16) topo="2;4,4;1,2;1,1" p=4 ;;
    64) topo="2;8,8;1,4;1,1" p=8 ;;
    256) topo="2;16,16;1,8;1,1" p=16 ;;
    1024) topo="2;32,32;1,16;1,1" p=32 ;;
    *) echo "unsupported rank count $r" >&2; exit 2 ;;
  esac
  n=$((5000 * p))
  fat_tree_toml "$topo" > "ft-$r.toml"
  hpl_dat "$n" 128 "$p" "$p" > "hpl-$r-default.dat"
  # SWAP 0 (binary exchange) and BCAST 3 (2ringM).
  sed -e 's/^2            SWAP/0            SWAP/' "hpl-$r-default.dat" > "hpl-$r-swap0.dat"
  sed -e 's/^1            BCASTs/3            BCASTs/' "hpl-$r-default.dat" > "hpl-$r-2ringM.dat"
  for v in default swap0 2ringM; do
    for m in "$exact" aggregated; do
      /usr/bin/time -f "%U %S" -o "cpu-$r-$v-$m.txt" "$bin" hpl "hpl-$r-$v.dat" --platform "ft-$r.toml" \
        "$option" "$m" --json > "out-$r-$v-$m.json"
    done
    python3 - "$r" "$n" "$v" "$exact" <<'PY'
import json, sys
r, n, v, exact = sys.argv[1:5]
def load(m):
    d = json.load(open(f"out-{r}-{v}-{m}.json"))[0]
    u, s = open(f"cpu-{r}-{v}-{m}.txt").read().split()[-2:]
    return d, float(u) + float(s)
(m, cm), (a, ca) = load(exact), load("aggregated")
diff = (a["time_s"] - m["time_s"]) / m["time_s"] * 100
print(f'{r:<6} {n:<8} {v:<10} {m["time_s"]:<14.6f} {a["time_s"]:<14.6f} {diff:+.4f}%   {m["messages"]:>10} / {a["messages"]:<10} {cm:7.2f} / {ca:<7.2f}')
PY
  done
done
