#!/usr/bin/env bash
# T-NBC overlap benchmark (seed 001, Table 1) under Open MPI: MPI_Alltoall of BYTES per peer on
# RANKS ranks followed by computation, for the seed's five scenarios, three variants side by
# side in one run: the blocking collective, T-NBC (the same binary with
# libmpiscope_overlap_openmpi.so preloaded) and MPI_Ialltoall + MPI_Wait.
#
# Scenarios, with T the T-NBC collective time measured first (pure, median):
#   a: CURC = 1.66 T, no CRC            (T_CURC >= T_comm)
#   b: CRC = 1.3 T                      (no CURC, R_CRC < R_comm)
#   c: CRC = 0.65 T                     (no CURC, R_CRC > R_comm)
#   d: CURC = 0.66 T, CRC = 1.3 T       (0 < T_CURC < T_comm, R_CRC < R_comm)
#   e: CURC = 0.66 T, CRC = 0.65 T      (0 < T_CURC < T_comm, R_CRC > R_comm)
# (the ratios of the seed's Table 1: 445, 350, 175 and 177 ms against T_comm = 268 ms).
# KIND sleep computes with usleep (no CPU contention with the progress thread: this machine
# has 2 cores for 2 ranks), spin on the CPU.
#
# Prints one markdown row per scenario and variant: times in us (medians over REPS of the
# slowest rank), overlap the OSU and IMB way, and the seed's model
# T_overlap = min(T_comm - T_init, T_CURC + T_comm R_comm / R_CRC) = min(pure - init,
# CURC + CRC) next to the measured hidden time pure + cpu - ovrl.
# Usage: scripts/bench-overlap.sh [BYTES=1048576] [REPS=20] [RANKS=2] [KIND=sleep] [SCENARIOS=abcde]
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${1:-1048576}; REPS=${2:-20}; RANKS=${3:-2}; KIND=${4:-sleep}; SCEN=${5:-abcde}
cargo build --release -q -p mpiscope-overlap-openmpi
LIB=$PWD/target/release/libmpiscope_overlap_openmpi.so
EXE=target/release/overlap_alltoall
mkdir -p target/release
mpicc.openmpi -O2 -o "$EXE" bench/overlap_alltoall.c
MPIRUN=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl self,vader
        --mca mpi_yield_when_idle 1 -np "$RANKS")
field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p"; }
run() { # variant curc crc
  case $1 in
    blocking) "${MPIRUN[@]}" "$EXE" blocking "$BYTES" "$REPS" "$2" "$3" "$KIND" ;;
    t-nbc) "${MPIRUN[@]}" -x LD_PRELOAD="$LIB" "$EXE" blocking "$BYTES" "$REPS" "$2" "$3" "$KIND" ;;
    ialltoall) "${MPIRUN[@]}" "$EXE" ialltoall "$BYTES" "$REPS" "$2" "$3" "$KIND" ;;
  esac
}
T=$(run t-nbc 0 0 | field pure_us)
echo "T-NBC collective alone: $T us; $RANKS ranks, $BYTES bytes per peer, $REPS repetitions, $KIND"
echo
echo "| scenario | variant | CURC | CRC | pure | cpu | ovrl | init | OSU overlap | IMB overlap | hidden (us) | model (us) | data |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for s in $(echo "$SCEN" | fold -w1); do
  case $s in
    a) CURC=$(awk "BEGIN{print int(1.66*$T)}"); CRC=0 ;;
    b) CURC=0; CRC=$(awk "BEGIN{print int(1.3*$T)}") ;;
    c) CURC=0; CRC=$(awk "BEGIN{print int(0.65*$T)}") ;;
    d) CURC=$(awk "BEGIN{print int(0.66*$T)}"); CRC=$(awk "BEGIN{print int(1.3*$T)}") ;;
    e) CURC=$(awk "BEGIN{print int(0.66*$T)}"); CRC=$(awk "BEGIN{print int(0.65*$T)}") ;;
    *) echo "unknown scenario $s" >&2; exit 2 ;;
  esac
  for v in blocking t-nbc ialltoall; do
    line=$(run "$v" "$CURC" "$CRC")
    pure=$(echo "$line" | field pure_us); cpu=$(echo "$line" | field cpu_us)
    ovrl=$(echo "$line" | field ovrl_us); init=$(echo "$line" | field init_us)
    osu=$(echo "$line" | field overlap_osu); imb=$(echo "$line" | field overlap_imb)
    data=$(echo "$line" | field data)
    awk -v s="$s" -v v="$v" -v curc="$CURC" -v crc="$CRC" -v pure="$pure" -v cpu="$cpu" \
        -v ovrl="$ovrl" -v init="$init" -v osu="$osu" -v imb="$imb" -v data="$data" 'BEGIN {
      hidden = pure + cpu - ovrl
      a = pure - init; b = curc + crc; model = (a < b ? a : b); if (v == "blocking") model = 0
      printf "| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.1f%% | %.1f%% | %.0f | %.0f | %s |\n",
        s, v, curc, crc, pure, cpu, ovrl, init, osu, imb, hidden, model, data }'
  done
done
