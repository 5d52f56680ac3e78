#!/usr/bin/env bash
# The HPL skeleton (`mpiscope hpl`) against SimGrid/SMPI running the unmodified HPL 2.3.
#
# 1. Builds HPL 2.3 with `smpicc` and Debian's OpenBLAS (CBLAS interface) twice into
#    target/bench-hpl-smpi/: as it comes (hpl/) and with HPL_NO_MPI_DATATYPE (hpl-nodt/,
#    for complete TI traces), from HPL_SRC: a directory holding HPL's sources, or a
#    hpl-2.3.tar.gz. Without HPL_SRC the sources come from the read-only mirror of the
#    public icl-utk-edu/hpl repository (HPL_MIRROR, a git directory), else from netlib's
#    tarball when online. HPL's code is never copied into this repository.
# 2. Writes the platform: a SimGrid flat cluster of 64 hosts, 10 Gbps and 24 us per link,
#    1 Gf hosts (smpi/host-speed is the same 1 Gf, so a computation timed for real on this
#    host takes the same simulated time), and an HPL.dat per case (HPL's default
#    algorithm choices, scripts/lib/hpl-dat.sh).
# 3. Runs smpirun twice per case with CM02 and no SMPI factors (`network/model:CM02`,
#    `smpi/bw-factor:1`, `smpi/lat-factor:1`), one OpenBLAS thread: `costs` (HPL as it
#    comes, SMPI's default probe and test costs) and `free` (HPL_NO_MPI_DATATYPE, free
#    probes and tests, a time-independent trace; tracing makes it 10-35x slower).
# 4. Calibrates this host's kernels (`mpiscope calibrate`, one thread, on the thread's CPU
#    clock as SMPI times HPL's computations: the load of a shared machine is not counted),
#    writes the same
#    platform in mpiscope's terms with them, runs `mpiscope hpl --network smpi` with the
#    same options on each case and replays the `free` run's TI trace, and prints case,
#    SMPI time (HPL's own WR line), SMPI's end date, the replay's, its error, mpiscope
#    hpl's time and its error against the WR time; and, for the `free` runs, one rank's
#    actions lined up by the hpl_actions example (crates/hpl/examples/hpl_actions.rs) into
#    smpi-CASE-free/actions.txt.
# Usage: scripts/bench-hpl-smpi.sh [CASE ...]   (cases: 16 64; default: both, 16 first)
# A case may name HPL's broadcast, look-ahead depth and row swaps: 64/b3d0s1 is the 8 x 8
# case with BCAST 3, DEPTH 0, SWAP 1 (the default is b1d1s2), in smpi-64-b3d0s1-MODE/.
# Environment: HPL_SRC, HPL_MIRROR; SKIP_SMPI=1 reuses the SMPI runs already in
# target/bench-hpl-smpi/, SMPI_ONLY=1 stops after them, SKIP_CALIBRATE=1 reuses the
# calibration; MODES: the runs per case (default "costs free"); NO_TRACE=1: the free runs
# without a TI trace (no replay, no action comparison; far faster); EXTRA_CFG: more
# KEY:VALUE options for both simulators.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/target/bench-hpl-smpi
mkdir -p "$out"
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(16 64)
export OPENBLAS_NUM_THREADS=1
# OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons (Sapphire Rapids) and falls
# back to its Prescott kernels, 7 Gflops a core here against 34 with SkylakeX's: on a CPU
# with AVX-512, SkylakeX unless OPENBLAS_CORETYPE says otherwise. SMPI's timed
# computations and `mpiscope calibrate`'s kernels use the same library in the same way.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
for tool in smpicc smpirun; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install simgrid" >&2; exit 1; }
done
[ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ] ||
  { echo "cblas.h not found: apt-get install libopenblas-dev" >&2; exit 1; }

# --- 1. HPL built with smpicc ----------------------------------------------------------
# build_hpl DIR CFLAGS: HPL's classic build (a Make.<arch> beside Make.top), MPI from smpicc.
build_hpl() {
  local hpl=$1 flags=$2 src=${HPL_SRC:-} mirror=${HPL_MIRROR:-/work/.mirror/icl-utk-edu+hpl/repo}
  [ -x "$hpl/bin/smpi/xhpl" ] && return 0
  rm -rf "$hpl.tmp" && mkdir -p "$hpl.tmp"
  if [ -n "$src" ] && [ -d "$src" ]; then
    cp -r "$src"/. "$hpl.tmp"/
  elif [ -n "$src" ] && [ -f "$src" ]; then
    tar -xzf "$src" -C "$hpl.tmp" --strip-components=1
  elif [ -d "$mirror" ]; then
    git --git-dir="$mirror" archive HEAD | tar -x -C "$hpl.tmp"
  else
    [ -s "$out/hpl-2.3.tar.gz" ] ||
      curl -fsSL https://www.netlib.org/benchmark/hpl/hpl-2.3.tar.gz -o "$out/hpl-2.3.tar.gz"
    tar -xzf "$out/hpl-2.3.tar.gz" -C "$hpl.tmp" --strip-components=1
  fi
  [ -f "$hpl.tmp/Make.top" ] || { echo "no HPL sources (Make.top) in ${src:-$mirror}" >&2; exit 1; }
  cat > "$hpl.tmp/Make.smpi" <<EOF_MAKE
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir -p
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = smpi
TOPdir       = $hpl
INCdir       = \$(TOPdir)/include
BINdir       = \$(TOPdir)/bin/\$(ARCH)
LIBdir       = \$(TOPdir)/lib/\$(ARCH)
HPLlib       = \$(LIBdir)/libhpl.a
LAlib        = -lopenblas
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS     = \$(HPLlib) \$(LAlib) -lm
HPL_OPTS     = -DHPL_CALL_CBLAS $flags
HPL_DEFS     = \$(HPL_OPTS) \$(HPL_INCLUDES)
CC           = smpicc
CCNOOPT      = \$(HPL_DEFS)
CCFLAGS      = \$(HPL_DEFS) -O3 -fcommon
LINKER       = smpicc
LINKFLAGS    = \$(CCFLAGS)
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = echo
EOF_MAKE
  rm -rf "$hpl" && mv "$hpl.tmp" "$hpl"
  (cd "$hpl" && make arch=smpi > "$hpl.log" 2>&1) ||
    { echo "HPL build failed: see $hpl.log" >&2; exit 1; }
}
# HPL as it comes (its panels and row swaps are MPI derived datatypes), and HPL with
# HPL_NO_MPI_DATATYPE (the same messages, contiguous): SimGrid's TI trace writes a
# derived datatype as `1 -1` (one element of an unknown type), so only the second one's
# trace keeps the sizes a replay needs.
build_hpl "$out/hpl" ""
build_hpl "$out/hpl-nodt" "-DHPL_NO_MPI_DATATYPE"

# --- 2. Platform and HPL.dat -------------------------------------------------------------
source scripts/lib/hpl-dat.sh
cat > "$out/cluster.xml" <<'EOF_XML'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-63" speed="1Gf" bw="10Gbps" lat="24us"/>
</platform>
EOF_XML
for i in $(seq 0 63); do echo "node-$i"; done > "$out/hosts.txt"
# case -> "ranks P Q N NB BCAST DEPTH SWAP"
case_params() {
  local algo=b1d1s2
  [[ $1 != */* ]] || algo=${1#*/}
  [[ $algo =~ ^b([0-5])d([0-9]+)s([0-2])$ ]] ||
    { echo "unknown algorithms $algo in case $1 (b0-5 d0-9 s0-2, e.g. 64/b3d0s1)" >&2; return 1; }
  local a="${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
  case ${1%%/*} in
    16) echo "16 4 4 8000 128 $a" ;;
    64) echo "64 8 8 16000 128 $a" ;;
    *) echo "unknown case $1 (16, 64)" >&2; return 1 ;;
  esac
}
# case_dir CASE MODE: its runs' directory.
case_dir() { echo "$out/smpi-${1/\//-}-$2"; }
read -r -a modes <<< "${MODES:-costs free}"
for c in "${cases[@]}"; do case_params "$c" > /dev/null; done
# The options both simulators get: CM02 without SMPI's factors. Two runs per case:
#   costs  HPL as it comes, SMPI's default cost of a probe and a test (1e-4 s, growing
#          counters), no trace: the headline comparison;
#   free   HPL_NO_MPI_DATATYPE, probes and tests free (`smpi/iprobe:0 smpi/test:0`), with
#          a TI trace: the replay check (a TI trace has no probes, so a replay of it can
#          only be compared with a run whose probes cost nothing) and the comparison of
#          actions (scripts/hpl-actions.py).
# network/weight-S:0 is CM02's own default in SimGrid; mpiscope's `--network smpi` (SMPI's
# per-call costs) otherwise keeps the SMPI model's 8775.
base_cfg=(network/model:CM02 network/weight-S:0 smpi/bw-factor:1 smpi/lat-factor:1)
read -r -a extra_cfg <<< "${EXTRA_CFG:-}"
mode_cfg() {
  case $1 in
    costs) ;;
    free) echo "smpi/iprobe:0 smpi/test:0" ;;
  esac
}

# --- 3. SMPI runs ------------------------------------------------------------------------
# smpi_run CASE MODE: HPL under smpirun in $out/smpi-CASE-MODE/.
smpi_run() {
  local c=$1 mode=$2 r p q n nb bcast depth swap
  read -r r p q n nb bcast depth swap <<< "$(case_params "$c")"
  local dir cfg=() o xhpl=$out/hpl/bin/smpi/xhpl trace=()
  dir=$(case_dir "$c" "$mode")
  if [ "$mode" = free ]; then
    xhpl=$out/hpl-nodt/bin/smpi/xhpl
    [ "${NO_TRACE:-0}" = 1 ] || trace=(-trace-ti --cfg=tracing/filename:ti.txt)
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  hpl_dat "$n" "$nb" "$p" "$q" "$bcast" "$depth" "$swap" > "$dir/HPL.dat"
  for o in "${base_cfg[@]}" $(mode_cfg "$mode") "${extra_cfg[@]}"; do cfg+=("--cfg=$o"); done
  echo "smpirun: $c: $r ranks, N = $n, $mode ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  (cd "$dir" && /usr/bin/time -f "%e s wall, %M KB" -o time.txt smpirun -np "$r" \
    -platform "$out/cluster.xml" -hostfile "$out/hosts.txt" "${cfg[@]}" \
    --cfg=smpi/host-speed:1Gf --cfg=smpi/display-timing:yes "${trace[@]}" \
    "$xhpl" > stdout.txt 2> stderr.txt) ||
    { echo "smpirun failed: see $dir/stderr.txt" >&2; return 1; }
}
if [ "${SKIP_SMPI:-0}" != 1 ]; then
  for c in "${cases[@]}"; do
    for mode in "${modes[@]}"; do smpi_run "$c" "$mode"; done
  done
fi

[ "${SMPI_ONLY:-0}" = 1 ] && exit 0

# --- 4. mpiscope: calibrated kernels, the skeleton, the replay of SMPI's trace ---------
cargo build --release -q -p mpiscope -p mpiscope-bench
cargo build --release -q -p mpiscope-hpl --example hpl_actions
bin=$root/target/release/mpiscope
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if [ "${SKIP_CALIBRATE:-0}" != 1 ] || [ ! -s "$out/calibrated.toml" ]; then
  # The network part of the calibration is not used (the cluster's links are the
  # platform's); calibrate needs a SEND & RECV sweep to run, a short one does.
  "$bin" bench -np 2 --bytes m8 M1048576 K8 --only send_recv T20 R1 --json \
    --output "$out/p2p.json" > /dev/null
  "$bin" calibrate "$out/p2p.json" --busy-cores 1 --kernel-clock thread --force -q -o "$out/calibrated.toml" \
    > "$out/calibrate.txt"
fi
# The same cluster in mpiscope's terms, with the calibrated kernels (not the pack cost
# of strided messages: SMPI copies datatypes inside its MPI calls, untimed).
{
  printf '[cluster]\nhosts = 64\nprefix = "node-"\nspeed = "1Gf"\n'
  printf 'bandwidth = "10Gbps"\nlatency = "24us"\n\n[config]\n'
  grep -E '^"mpiscope/(dgemm|dtrsm|panel|laswp)"' "$out/calibrated.toml"
} > "$out/cluster.toml"
# WR line of an HPL output: the time from Gflops (HPL prints 2 decimals of time).
wr_time() {
  awk '$1 ~ /^WR/ && NF == 7 { n = $2; printf "%.4f\n", (2 / 3 * n * n * n + 1.5 * n * n) / ($7 * 1e9) }' "$1"
}
sim_time() { grep -o 'Simulated time: [0-9.e+-]*' "$1" | awk '{ print $3 }'; }
printf '%-30s %9s %9s %10s %9s %12s %8s\n' case "SMPI WR" "SMPI end" "replay TI" "error" "mpiscope hpl" error
for c in "${cases[@]}"; do
  read -r r p q n nb bcast depth swap <<< "$(case_params "$c")"
  for mode in "${modes[@]}"; do
    dir=$(case_dir "$c" "$mode")
    grep -q "^WR" "$dir/HPL.out" 2>/dev/null || { echo "no finished SMPI run in $dir" >&2; continue; }
    cfg=()
    for o in "${base_cfg[@]}" $(mode_cfg "$mode") "${extra_cfg[@]}"; do cfg+=(--cfg "$o"); done
    "$bin" hpl "$dir/HPL.dat" --platform "$out/cluster.toml" --hostfile "$out/hosts.txt" \
      --network smpi "${cfg[@]}" -q --timeline "$dir/skeleton.json" --force > "$dir/mpiscope-hpl.txt"
    traced=0
    [ "$mode" != free ] || [ ! -s "$dir/ti.txt" ] || traced=1
    [ "$traced" = 0 ] || "$bin" replay "$dir/ti.txt" --platform "$out/cluster.xml" --hostfile "$out/hosts.txt" \
      --network smpi "${cfg[@]}" --json > "$dir/replay.json" 2> "$dir/replay.err"
    # One rank's actions, the skeleton's beside HPL's (ACTIONS_RANK, default 0).
    [ "$traced" = 0 ] || "$root/target/release/examples/hpl_actions" "$dir/HPL.dat" \
      "$out/cluster.toml" "$dir/ti.txt" "${ACTIONS_RANK:-0}" "${base_cfg[@]}" \
      $(mode_cfg "$mode") "${extra_cfg[@]}" > "$dir/actions.txt"
    smpi_wr=$(wr_time "$dir/HPL.out")
    smpi_end=$(sim_time "$dir/stderr.txt")
    rep=-
    if [ "$traced" = 1 ]; then
      rep=$(grep -o '"makespan_s": *[0-9.e+-]*' "$dir/replay.json" | head -1 | awk '{ print $2 }')
    fi
    hpl_t=$(wr_time "$dir/mpiscope-hpl.txt")
    awk -v c="$c ($p x $q) N=$n $mode" -v a="$smpi_wr" -v e="$smpi_end" -v rp="$rep" -v h="$hpl_t" \
      'BEGIN {
        if (rp == "-") { rs = sprintf("%10s %9s", "-", "-") }
        else { rs = sprintf("%10.4f %+8.2f%%", rp, (rp - e) / e * 100) }
        printf "%-30s %9.4f %9.4f %s %12.4f %+7.1f%%\n", c, a, e, rs, h, (h - a) / a * 100 }'
  done
done
