#!/usr/bin/env bash
# T-NBC's collective against the MPI library's own with nothing to overlap:
# bench/tnbc_speed.c (the collective, then a read of every received page) without T-NBC and
# with it (every call overlapped, every size: MPISCOPE_OVERLAP_POLICY=always,
# MPISCOPE_OVERLAP_MIN_BYTES=1), with block interiors through the MPI's non-blocking
# collective (the default) and through T-NBC's own schedule (`pieces`), and as a user runs it
# (`default`: the adaptive policy and size threshold, which send a collective with nothing
# to overlap to the MPI's own). The four run in turn RUNS times; the table gives the medians
# and T-NBC's ratio to the MPI's own.
#
#   scripts/bench-tnbc-speed.sh [RUNS] [REPS]
#
# Grid from the environment: FLAVOURS [openmpi mpich], RANKS [2 4], COLLS [alltoall alltoallv
# bcast], SIZES [65536 262144 1048576 4194304 16777216].
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
reps=${2:-20}
flavours=${FLAVOURS:-openmpi mpich}
ranks=${RANKS:-2 4}
colls=${COLLS:-alltoall alltoallv bcast}
sizes=${SIZES:-65536 262144 1048576 4194304 16777216}
out=target/bench-tnbc-speed
mkdir -p "$out"
cargo build --release -q -p mpiscope-overlap-openmpi -p mpiscope-overlap-mpich
mpicc -O2 -o "$out/speed-openmpi" bench/tnbc_speed.c
mpicc.mpich -O2 -o "$out/speed-mpich" bench/tnbc_speed.c

# one FLAVOUR NP MODE ARGS...: the median of one run (MODE: mpi, native, pieces or default).
one() {
  local flavour=$1 np=$2 mode=$3
  shift 3
  local lib=$PWD/target/release/libmpiscope_overlap_$flavour.so pre=()
  if [ "$flavour" = openmpi ]; then
    case $mode in
      mpi) ;;
      default) pre=(-x "LD_PRELOAD=$lib") ;;
      *) pre=(-x "LD_PRELOAD=$lib" -x MPISCOPE_OVERLAP_POLICY=always
           -x MPISCOPE_OVERLAP_MIN_BYTES=1 -x "MPISCOPE_OVERLAP_TRANSFER=$mode") ;;
    esac
    mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np "$np" "${pre[@]}" \
      "$out/speed-openmpi" "$@"
  else
    case $mode in
      mpi) ;;
      default) pre=(-genv LD_PRELOAD "$lib") ;;
      *) pre=(-genv LD_PRELOAD "$lib" -genv MPISCOPE_OVERLAP_POLICY always
           -genv MPISCOPE_OVERLAP_MIN_BYTES 1 -genv MPISCOPE_OVERLAP_TRANSFER "$mode") ;;
    esac
    mpirun.mpich -np "$np" "${pre[@]}" "$out/speed-mpich" "$@"
  fi | { read -r line; [[ $line == *"data ok"* ]] || { echo "bad run: $line" >&2; exit 1; }
         sed -n 's/.*median_us \([0-9.]*\).*/\1/p' <<<"$line"; }
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "| MPI | ranks | collective | bytes/peer | MPI's own (us) | T-NBC native (us) | ratio | T-NBC pieces (us) | ratio | T-NBC default (us) | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for flavour in $flavours; do
  for np in $ranks; do
    for coll in $colls; do
      for bytes in $sizes; do
        m=() n=() p=() d=()
        for _ in $(seq "$runs"); do
          m+=("$(one "$flavour" "$np" mpi "$coll" "$bytes" "$reps")")
          n+=("$(one "$flavour" "$np" native "$coll" "$bytes" "$reps")")
          p+=("$(one "$flavour" "$np" pieces "$coll" "$bytes" "$reps")")
          d+=("$(one "$flavour" "$np" default "$coll" "$bytes" "$reps")")
        done
        a=$(printf '%s\n' "${m[@]}" | median)
        b=$(printf '%s\n' "${n[@]}" | median)
        c=$(printf '%s\n' "${p[@]}" | median)
        e=$(printf '%s\n' "${d[@]}" | median)
        awk -v f="$flavour" -v np="$np" -v co="$coll" -v by="$bytes" -v a="$a" -v b="$b" -v c="$c" -v e="$e" \
          'BEGIN { printf "| %s | %d | %s | %d | %.1f | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f |\n", f, np, co, by, a, b, b / a, c, c / a, e, e / a }'
      done
    done
  done
done
