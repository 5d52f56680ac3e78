#!/usr/bin/env bash
# Replays of ranks that shared cores: compute bursts as CPU work against their wall time
# (`mpiscope trace --cpu-time`, `mpiscope replay --wall-bursts`). Calibrates this host once
# (`mpiscope bench` + `mpiscope calibrate`, BLAS kernels and the per-core speed under load
# included), then traces GROMACS mdrun and LAMMPS at 2 and 4 ranks on this 2-core host, as
# scripts/bench-apps.sh runs them (ranks bound to cores, two per core at 4 ranks,
# `mpi_yield_when_idle`), ROUNDS times, and per run writes to target/bench-cputime/runs.csv:
# the load, the measured span (end of MPI_Init to MPI_Finalize, the longest rank), the
# replay with wall bursts (before) and with CPU times (after); per run directory
# `bursts.txt` holds each rank's burst wall and CPU time (the `burst_cpu` example).
# Usage: scripts/bench-cputime.sh [ROUNDS] [TPR] [LAMMPS_STEPS] [PLATFORM]
#   TPR: a GROMACS run input (default: scripts/bench-apps.sh's, made by it when missing);
#   PLATFORM: a calibrated platform to use instead of calibrating first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apps.sh
ROUNDS=${1:-3}
TPR=${2:-$PWD/target/bench-apps/gmx-input/topol.tpr}
LSTEPS=${3:-1000}
PLATFORM=${4:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cargo build --release -q -p mpiscope -p mpiscope-preload-openmpi -p mpiscope-bench
cargo build --release -q -p mpiscope-trace --example burst_cpu
root=$PWD
M=$root/target/release/mpiscope
B=$root/target/release/examples/burst_cpu
out=$root/target/bench-cputime
mkdir -p "$out"
[ -f "$TPR" ] || { echo "bench-cputime: no $TPR (run scripts/bench-apps.sh once, or give TPR)" >&2; exit 1; }
if [ -z "$PLATFORM" ]; then
  PLATFORM=$out/calibrated.toml
  apps_calibrate "$out" "$PLATFORM" --force
fi
apps_lj_input "$out/in.lj" "$LSTEPS"
makespan() { "$M" replay "$@" --json --quiet | python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan_s"])'; }
apps=(gmx)
command -v lmp > /dev/null && apps+=(lmp)
echo "app,np,round,load1,span_s,replay_wall_bursts_s,replay_cpu_s" > "$out/runs.csv"
for r in $(seq "$ROUNDS"); do
  for app in "${apps[@]}"; do
    for np in 2 4; do
      d=$out/$app/np$np/r$r
      rm -rf "$d" && mkdir -p "$d"
      case $app in
        gmx) cmd=(gmx_mpi -quiet mdrun -s "$TPR" -ntomp 1 -reprod -nb cpu -deffnm md) ;;
        lmp) cmd=(lmp -in "$out/in.lj" -log log.lammps -screen none) ;;
      esac
      load=$(cut -d' ' -f1 /proc/loadavg)
      read -r -a launch <<< "$(apps_launcher "$np")"
      (cd "$d" && "$M" trace -q -o trace -- "${launch[@]}" "${cmd[@]}" > run.out 2>&1)
      "$M" report "$d/trace" --json > "$d/report.json"
      span=$(python3 -c 'import json, sys; print(max(p["app_s"] for p in json.load(open(sys.argv[1]))["per_rank"]))' "$d/report.json")
      flags=(--platform "$PLATFORM" --mapping "sequential:$np" --bind-to core)
      before=$(makespan "$d/trace" "${flags[@]}" --wall-bursts)
      after=$(makespan "$d/trace" "${flags[@]}")
      "$B" "$d/trace" > "$d/bursts.txt"
      echo "$app,$np,$r,$load,$span,$before,$after" | tee -a "$out/runs.csv"
    done
  done
done
python3 - "$out/runs.csv" <<'EOF2'
import csv, statistics, sys
groups = {}
for r in csv.DictReader(open(sys.argv[1])):
    groups.setdefault((r["app"], int(r["np"])), []).append(r)
print("| application | ranks | span (s) | wall bursts (s) | error | CPU times (s) | error |")
print("|---|---:|---:|---:|---:|---:|---:|")
for (app, np), rs in sorted(groups.items()):
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    err = lambda k: statistics.median(
        100 * (float(r[k]) - float(r["span_s"])) / float(r["span_s"]) for r in rs)
    print(f"| {app} | {np} | {med('span_s'):.3f} | {med('replay_wall_bursts_s'):.3f} | "
          f"{err('replay_wall_bursts_s'):+.1f}% | {med('replay_cpu_s'):.3f} | {err('replay_cpu_s'):+.1f}% |")
EOF2
