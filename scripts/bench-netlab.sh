#!/usr/bin/env bash
# The emulated cluster network measured (docs/BENCHMARKS.md, "An emulated cluster network"):
# for each rate (unshaped, 10gbit, 1gbit by default), a namespace from scripts/netlab.sh,
# and in it, ROUNDS times, 2 ranks of Open MPI over TCP, with Open MPI's defaults and with
# its TCP progress thread:
#   - mpiscope-bench SEND & RECV at 8 B (latency: half the round trip) and 8 MiB (bandwidth:
#     both messages of the round trip over its time), SENDRECV at 8 MiB (an exchange: each
#     rank sends and receives 8 MiB at once, through the one bucket both directions share);
#   - scripts/probes/netlab-alltoall.c: 4 MiB per peer MPI_Alltoall, blocking (`wait`) and
#     MPI_Ialltoall tested every 50 us with the core given up in between (`sleep`): wall
#     time, user + system CPU time per rank, CPU ns per KiB sent.
# Prints the medians per rate and variant; every sample is kept in target/bench-netlab/.
# Usage: scripts/bench-netlab.sh [ROUNDS] [RATE...]   (as root; RATE as netlab.sh takes it)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
shift || true
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(unshaped 10gbit 1gbit)
cargo build --release -q -p mpiscope-bench
mkdir -p target/probes
mpicc -O2 -o target/probes/netlab-alltoall scripts/probes/netlab-alltoall.c
out=target/bench-netlab
mkdir -p "$out"
samples=$out/samples.txt
: >"$samples"
name=bench$$
trap 'scripts/netlab.sh down "$name" --kill >/dev/null 2>&1 || true' EXIT
bench=target/release/mpiscope-bench
declare -A VARIANT=(
  [default]=""
  [thread]="--progress-thread"
)
MIB8=8388608
for rate in "${RATES[@]}"; do
  scripts/netlab.sh up "$name" --rate "$rate" >&2
  # About a second of MPI_Alltoall at the rate (8 MiB cross the bucket per call).
  case $rate in
    unshaped) iters=100 ;;
    *)
      bits=$(sed -n "s/^rate_bits=//p" "${MPISCOPE_NETLAB_DIR:-/run/mpiscope-netlab}/$name")
      iters=$(awk -v b="$bits" 'BEGIN { n = int(b / 8 / 8388608); if (n < 5) n = 5; if (n > 100) n = 100; print n }')
      ;;
  esac
  for r in $(seq "$ROUNDS"); do
    for v in default thread; do
      # shellcheck disable=SC2086
      csv=$(scripts/netlab.sh mpirun "$name" --np 2 ${VARIANT[$v]} -- "$bench" --bytes --min 8 \
        --max "$MIB8" --factor 1024 --only send_recv,sendrecv --long-iters 20 --buffer 67108864 --csv)
      lat=$(awk -F, '$2 == "\"SEND & RECV\"" && $18 == 8 {printf "%.2f", $7 / 2 * 1e6}' <<<"$csv")
      bw=$(awk -F, -v m="$MIB8" '$2 == "\"SEND & RECV\"" && $18 == m {printf "%.3f", 2 * m * 8 / $7 / 1e9}' <<<"$csv")
      xc=$(awk -F, -v m="$MIB8" '$2 == "\"SENDRECV\"" && $18 == m {printf "%.3f", m * 8 / $7 / 1e9}' <<<"$csv")
      echo "$rate $v lat_us $lat" >>"$samples"
      echo "$rate $v bw_gbit $bw" >>"$samples"
      echo "$rate $v xchg_gbit $xc" >>"$samples"
      for mode in wait sleep; do
        # shellcheck disable=SC2086
        line=$(scripts/netlab.sh mpirun "$name" --np 2 ${VARIANT[$v]} -- \
          target/probes/netlab-alltoall 4194304 "$iters" "$mode")
        for k in gbit_s cpu_per_wall ns_per_kib; do
          echo "$rate $v ${mode}_$k $(tr ' ' '\n' <<<"$line" | sed -n "s/^$k=//p")" >>"$samples"
        done
      done
      echo "round $r, $rate, $v: latency $lat us, bandwidth $bw Gbit/s, exchange $xc Gbit/s per direction; alltoall: $line" >&2
    done
  done
  scripts/netlab.sh down "$name" >&2
done
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
m() { awk -v a="$1" -v b="$2" -v c="$3" '$1 == a && $2 == b && $3 == c {print $4}' "$samples" | median; }
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores); $ROUNDS rounds, medians"
printf "| rate set | Open MPI | latency 8 B (us) | bandwidth 8 MiB (Gbit/s) | exchange 8 MiB (Gbit/s each way) | alltoall wait: Gbit/s, CPU/wall, CPU ns/KiB | alltoall sleep: Gbit/s, CPU/wall, CPU ns/KiB |\n"
printf "|---|---|---|---|---|---|---|\n"
for rate in "${RATES[@]}"; do
  for v in default thread; do
    printf "| %s | %s | %s | %s | %s | %s, %s, %s | %s, %s, %s |\n" "$rate" "$v" \
      "$(m "$rate" "$v" lat_us)" "$(m "$rate" "$v" bw_gbit)" "$(m "$rate" "$v" xchg_gbit)" \
      "$(m "$rate" "$v" wait_gbit_s)" "$(m "$rate" "$v" wait_cpu_per_wall)" "$(m "$rate" "$v" wait_ns_per_kib)" \
      "$(m "$rate" "$v" sleep_gbit_s)" "$(m "$rate" "$v" sleep_cpu_per_wall)" "$(m "$rate" "$v" sleep_ns_per_kib)"
  done
done
