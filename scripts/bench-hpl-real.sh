#!/usr/bin/env bash
# Real HPL on this host, for validating the HPL skeleton (issue: Plan).
#
# Debian's `hpcc` contains netlib HPL 2.x linked with OpenBLAS. For each process count NP in
# 1, 2, 4 this runs hpcc once (OPENBLAS_NUM_THREADS=1) with every grid P x Q = NP of
# {1x1, 1x2, 2x1, 2x2} and every N of NS, NB fixed, the other HPL parameters at HPL's
# defaults (written to target/bench-hpl/HPL.dat too, so the skeleton runs the same
# configurations), ROUNDS times, interleaved, and writes one CSV line per HPL result:
#   round,np,p,q,n,nb,time_s,gflops,tv
# time_s is recomputed from Gflops (HPL prints the time with 2 decimals only, Gflops with 4
# significant digits): time = (2/3 N^3 + 3/2 N^2) / (Gflops 1e9), as HPL defines Gflops.
# to target/bench-hpl/real.csv. Ranks are bound to cores (`--bind-to core --map-by core`:
# rank i on core i mod 2). 4 ranks on this 2-core host are oversubscribed, two per core
# (ranks 0 and 2, the first process column, on core 0): Open MPI runs them with
# `mpi_yield_when_idle` so waiting ranks give their core away. Bound, these runs repeat
# within 3-5%; unbound, the kernel moves the 4 processes between the cores and the same
# run varies by 10-20%.
# Usage: scripts/bench-hpl-real.sh [ROUNDS] [NB] ["N1 N2 ..."]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
NB=${2:-128}
read -r -a NS <<< "${3:-2000 4000 6000 8000}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
if ! command -v hpcc >/dev/null; then
  echo "hpcc not found: apt-get install hpcc (scripts/deps.sh installs it)" >&2
  exit 1
fi
out=target/bench-hpl
mkdir -p "$out"

# The HPL.dat lines shared by hpcc and the skeleton (hpl_dat NS NB PS QS).
source scripts/lib/hpl-dat.sh

hpl_dat "${NS[*]}" "$NB" "1 1 2 2" "1 2 1 2" > "$out/HPL.dat"
echo "round,np,p,q,n,nb,time_s,gflops,tv" > "$out/real.csv"
# The strided copy rate of this VM has fast phases (VECTOR SEND at 4.9-7 GB/s for minutes,
# else 1.9-2.2) that HPL's panels do not show: measure VECTOR SEND (and COLD SEND beside
# it) after each hpcc run, for scripts/bench-hpl-validate.sh to keep the slowest
# (`mpiscope calibrate --strided`).
cargo build --release -q -p mpiscope -p mpiscope-bench
rm -f "$out"/strided-*.json
for r in $(seq "$ROUNDS"); do
  for np in 1 2 4; do
    case $np in
      1) ps="1" qs="1" ;;
      2) ps="1 2" qs="2 1" ;;
      4) ps="2" qs="2" ;;
    esac
    work="$out/run-np$np"
    rm -rf "$work" && mkdir -p "$work"
    {
      hpl_dat "${NS[*]}" "$NB" "$ps" "$qs"
      echo "##### This line (no. 32) is ignored (it serves as a separator). ######"
      echo "0                      		Number of additional problem sizes for PTRANS"
      echo "1200 10000 30000        	values of N"
      echo "0                       	number of additional blocking sizes for PTRANS"
      echo "40 9 8 13 13 20 16 32 64       	values of NB"
    } > "$work/hpccinf.txt"
    (cd "$work" && mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 \
      --bind-to core:overload-allowed --map-by core -np "$np" hpcc > hpcc.log 2>&1)
    # HPL result lines: T/V  N  NB  P  Q  Time  Gflops
    awk -v r="$r" -v np="$np" '$1 ~ /^WR/ && NF == 7 {
        n = $2; t = (2 / 3 * n * n * n + 1.5 * n * n) / ($7 * 1e9)
        printf "%s,%s,%s,%s,%s,%s,%.6f,%s,%s\n", r, np, $4, $5, n, $3, t, $7, $1 }' \
      "$work/hpccoutf.txt" | tee -a "$out/real.csv"
    target/release/mpiscope bench -np 2 --bind-to core --bytes m1048576 M4194304 K4 \
      --only vector_send,cold_send T100 R1 --json --output "$out/strided-r$r-np$np.json" \
      > /dev/null
  done
done
