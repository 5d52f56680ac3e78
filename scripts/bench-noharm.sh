#!/usr/bin/env bash
# T-NBC does no harm: bench/noharm.c (MPI_Alltoall, then computation, then the received blocks
# consumed, no barrier) with and without T-NBC (its defaults: the adaptive policy, the
# break-even size threshold), run alternately, on a quiet machine and on one whose cores all
# spin with other work. Each run loops for about 0.6 s (30 to 20,000 iterations), so that
# small collectives are timed over enough calls. Prints one table row per configuration: the medians of the program's
# time without and with T-NBC and the difference; rows more than 3% slower are marked.
#
#   scripts/bench-noharm.sh [RUNS]
#
# The grid comes from the environment (defaults in brackets): FLAVOURS [openmpi mpich],
# RANKS [2 8], SIZES [1024 65536 1048576 16777216], KINDS [sleep spin io],
# SCENARIOS [none d] (none: the collective alone; d: [Li 2010]'s CURC 0.66 T + CRC 1.3 T,
# T the blocking collective's time), LOADS [quiet loaded].
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
flavours=${FLAVOURS:-openmpi mpich}
ranks=${RANKS:-2 8}
sizes=${SIZES:-1024 65536 1048576 16777216}
kinds=${KINDS:-sleep spin io}
scenarios=${SCENARIOS:-none d}
loads=${LOADS:-quiet loaded}
out=target/bench-noharm
mkdir -p "$out"
cargo build --release -q -p mpiscope-overlap-openmpi -p mpiscope-overlap-mpich
mpicc -O2 -o "$out/noharm-openmpi" bench/noharm.c
mpicc.mpich -O2 -o "$out/noharm-mpich" bench/noharm.c
hogs=()
stop_hogs() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT

# launch FLAVOUR NP TNBC ARGS...: prints the program's line.
launch() {
  local flavour=$1 np=$2 tnbc=$3
  shift 3
  local exe=$out/noharm-$flavour lib=target/release/libmpiscope_overlap_$flavour.so
  if [ "$flavour" = openmpi ]; then
    local pre=()
    [ "$tnbc" = 1 ] && pre=(-x "LD_PRELOAD=$PWD/$lib" -x MPISCOPE_OVERLAP_STATS=1)
    mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np "$np" "${pre[@]}" "$exe" "$@"
  else
    local pre=()
    [ "$tnbc" = 1 ] && pre=(-genv LD_PRELOAD "$PWD/$lib" -genv MPISCOPE_OVERLAP_STATS 1)
    mpirun.mpich -np "$np" "${pre[@]}" "$exe" "$@"
  fi
}
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "| load | MPI | ranks | bytes/peer | kind | scenario | iters | without T-NBC (s) | with T-NBC (s) | difference | rank 0: calls overlapped, decision (last run) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for load in $loads; do
  if [ "$load" = loaded ]; then
    for _ in $(seq "$(nproc)"); do
      (while :; do :; done) &
      hogs+=($!)
    done
  fi
  for flavour in $flavours; do
    for np in $ranks; do
      for bytes in $sizes; do
        # T: the blocking collective's time per call.
        t_us=$(launch "$flavour" "$np" 0 "$bytes" 20 0 0 sleep | field per_iter_us)
        for kind in $kinds; do
          for sc in $scenarios; do
            read -r curc crc < <(awk -v t="$t_us" -v s="$sc" \
              'BEGIN { if (s == "d") printf "%.0f %.0f\n", 0.66 * t, 1.3 * t; else print "0 0" }')
            iters=$(awk -v t="$t_us" -v a="$curc" -v b="$crc" \
              'BEGIN { n = int(600000 / (t + a + b)); if (n < 30) n = 30; if (n > 20000) n = 20000; print n }')
            without=()
            with=()
            for _ in $(seq "$runs"); do
              line=$(launch "$flavour" "$np" 0 "$bytes" "$iters" "$curc" "$crc" "$kind")
              [[ $line == *"data ok"* ]] || { echo "wrong data without T-NBC: $line" >&2; exit 1; }
              without+=("$(field total_s <<<"$line")")
              line=$(launch "$flavour" "$np" 1 "$bytes" "$iters" "$curc" "$crc" "$kind" 2> "$out/stats.txt")
              # Rank 0's site: calls overlapped and the decision at the end of the run.
              decided=$(sed -n 's/.*rank 0 site .* overlapping \([0-9]*\) decision \([a-z]*\).*/\1 \2/p' "$out/stats.txt" | head -1)
              [[ $line == *"data ok"* ]] || { echo "wrong data with T-NBC: $line" >&2; exit 1; }
              with+=("$(field total_s <<<"$line")")
            done
            a=$(printf '%s\n' "${without[@]}" | median)
            b=$(printf '%s\n' "${with[@]}" | median)
            awk -v l="$load" -v f="$flavour" -v n="$np" -v by="$bytes" -v k="$kind" -v s="$sc" \
              -v i="$iters" -v a="$a" -v b="$b" -v dec="${decided:-below the threshold}" 'BEGIN {
                d = 100 * (b / a - 1); mark = d > 3 ? " **over 3%**" : "";
                printf "| %s | %s | %d | %d | %s | %s | %d | %.4f | %.4f | %+.1f%%%s | %s |\n", l, f, n, by, k, s, i, a, b, d, mark, dec }'
          done
        done
      done
    done
  done
  stop_hogs
done
