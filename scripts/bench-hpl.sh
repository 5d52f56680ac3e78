#!/usr/bin/env bash
# Wall time and peak RSS of `mpiscope hpl` at growing scale: for each rank count R in
# "$@" (default 16 64 256 1024; perfect squares from the list below), a two-level fat tree
# of R hosts (10 Gf, 10 Gbps / 1 us cables) and an HPL.dat with P = Q = sqrt(R),
# N = 5000 * sqrt(R), NB = 128, BCAST 1rinM, depth 1, SWAP mix (threshold 64).
# Prints one line per scale from /usr/bin/time -v and the run's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/hpl-dat.sh
cargo build --release -q -p mpiscope
bin=$PWD/target/release/mpiscope
dir=target/bench-hpl
mkdir -p "$dir"
cd "$dir"
for r in "${@:-16 64 256 1024}"; do
  for r in $r; do
    case $r in
      16) topo="2;4,4;1,2;1,1" p=4 ;;
      64) topo="2;8,8;1,4;1,1" p=8 ;;
      256) topo="2;16,16;1,8;1,1" p=16 ;;
      1024) topo="2;32,32;1,16;1,1" p=32 ;;
      4096) topo="2;64,64;1,32;1,1" p=64 ;;
      *) echo "unsupported rank count $r" >&2; exit 2 ;;
    esac
    n=$((5000 * p))
    fat_tree_toml "$topo" > "ft-$r.toml"
    hpl_dat "$n" 128 "$p" "$p" > "hpl-$r.dat"
    /usr/bin/time -v "$bin" hpl "hpl-$r.dat" --platform "ft-$r.toml" --json > "out-$r.json" 2> "time-$r.txt"
    echo "ranks $r N $n: $(grep -E 'User time|Elapsed|Maximum resident' "time-$r.txt" | tr -s ' \t' ' ' | tr '\n' ';')"
    tr -d ' \n' < "out-$r.json"; echo
  done
done
