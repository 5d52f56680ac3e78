#!/usr/bin/env bash
# T-NBC where transfers take wall time: the FT-like and IS-like programs (bench/ft_overlap.c,
# bench/is_overlap.c) on 2 ranks of Open MPI over the emulated network of scripts/netlab.sh,
# at each rate: without T-NBC, with T-NBC (its default, adaptive policy, and every call
# overlapped), and with the non-blocking call placed by hand (MPI_Ialltoall(v) + MPI_Wait),
# RUNS runs each in turn, medians; then `mpiscope overlap predict` on a trace of each
# program's blocking run on the same network (its adaptive-policy and always-overlap
# figures, beside the measured ones; the latter also with `--access`, an access trace of
# the same run, where only the computation before the data's first read hides a call). Every run's checksum must equal the blocking
# run's. Prints a markdown table: time and gain over blocking ((T_blocking / T - 1), as
# [Li 2010] reports FT +5% and IS +36%), and the predicted gain.
#
#   scripts/bench-ft-is.sh [RUNS]
#
# Environment: RATES [1gbit 10gbit]; FT_ARGS and IS_ARGS, the programs' arguments after the
# mode (defaults below: computation of the order of the transfer at 1 Gbit/s).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
rates=${RATES:-1gbit 10gbit}
ft_args=${FT_ARGS:-2097152 10 6 2}
is_args=${IS_ARGS:-2000000 8 2 3}
out=target/bench-ft-is
mkdir -p "$out"
cargo build --release -q -p mpiscope -p mpiscope-overlap-openmpi -p mpiscope-preload-openmpi
mpicc -O2 -o "$out/ft" bench/ft_overlap.c -lm
mpicc -O2 -o "$out/is" bench/is_overlap.c
lib=$PWD/target/release/libmpiscope_overlap_openmpi.so
name=ftis$$
cleanup() { scripts/netlab.sh down "$name" --kill >/dev/null 2>&1 || true; }
trap cleanup EXIT

# on_net PROGRAM MODE [ENV...]: one run over the network; prints "total_s checksum".
on_net() {
  local prog=$1 mode=$2
  shift 2
  local x=()
  for e in "$@"; do x+=(-x "$e"); done
  local args=$ft_args
  [ "$prog" = is ] && args=$is_args
  # shellcheck disable=SC2086
  scripts/netlab.sh mpirun "$name" --np 2 --progress-thread "${x[@]}" -- "$PWD/$out/$prog" "$mode" $args |
    sed -n 's/.*total_s \([0-9.]*\) checksum \(.*\)/\1 \2/p'
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "| rate | program | blocking (s) | T-NBC adaptive (s) | gain | predicted | T-NBC always (s) | gain | predicted | predicted, first reads | by hand (s) | gain |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for rate in $rates; do
  scripts/netlab.sh up "$name" --rate "$rate" >/dev/null
  for prog in ft is; do
    hand=ialltoall
    [ "$prog" = is ] && hand=ialltoallv
    declare -A t=()
    ref=""
    for _ in $(seq "$runs"); do
      for variant in blocking adaptive always hand; do
        case $variant in
          blocking) r=$(on_net "$prog" blocking) ;;
          adaptive) r=$(on_net "$prog" blocking "LD_PRELOAD=$lib") ;;
          always) r=$(on_net "$prog" blocking "LD_PRELOAD=$lib" MPISCOPE_OVERLAP_POLICY=always) ;;
          hand) r=$(on_net "$prog" "$hand") ;;
        esac
        read -r secs sum <<<"$r"
        [ -n "$ref" ] || ref=$sum
        [ "$sum" = "$ref" ] || { echo "$prog $variant: checksum $sum, blocking gave $ref" >&2; exit 1; }
        t[$variant]="${t[$variant]:-} $secs"
      done
    done
    for v in blocking adaptive always hand; do
      t[$v]=$(tr ' ' '\n' <<<"${t[$v]}" | grep . | median)
    done
    # The prediction, from a trace of the blocking run on the same network.
    trace=$out/trace-$prog-$rate
    rm -rf "$trace"
    args=$ft_args
    [ "$prog" = is ] && args=$is_args
    # shellcheck disable=SC2086
    scripts/netlab.sh run "$name" -- target/release/mpiscope trace --force -o "$trace" -- \
      mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
      --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo --mca btl_tcp_progress_thread 1 \
      --mca mpi_yield_when_idle 1 -np 2 "$PWD/$out/$prog" blocking $args >/dev/null
    # The first reads of the received data, from an access trace of the same run.
    acc=$out/access-$prog-$rate
    rm -rf "$acc"
    # shellcheck disable=SC2086
    scripts/netlab.sh run "$name" -- target/release/mpiscope overlap --trace-access -o "$acc" \
      --preload "$lib" -- \
      mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl tcp,self \
      --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo --mca btl_tcp_progress_thread 1 \
      --mca mpi_yield_when_idle 1 -np 2 "$PWD/$out/$prog" blocking $args >/dev/null
    gain='import json,sys; p=json.load(sys.stdin); g=lambda k: 100*p[k]/max(1,p["span_ns"]-p[k]); print(g("min_saved_ns"), g("adaptive_min_saved_ns"))'
    read -r pred apred < <(target/release/mpiscope overlap predict --json "$trace" | python3 -c "$gain")
    read -r rpred _ < <(target/release/mpiscope overlap predict --json --access "$acc" "$trace" |
      python3 -c "$gain")
    awk -v r="$rate" -v p="$prog" -v b="${t[blocking]}" -v a="${t[adaptive]}" -v w="${t[always]}" \
      -v h="${t[hand]}" -v pr="$pred" -v ap="$apred" -v rp="$rpred" 'BEGIN {
        printf "| %s | %s-like | %.3f | %.3f | %+.1f%% | %+.1f%% | %.3f | %+.1f%% | %+.1f%% | %+.1f%% | %.3f | %+.1f%% |\n",
          r, toupper(p), b, a, 100 * (b / a - 1), ap, w, 100 * (b / w - 1), pr, rp, h, 100 * (b / h - 1) }'
    unset t
  done
  cleanup
done
