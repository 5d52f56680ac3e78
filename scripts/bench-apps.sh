#!/usr/bin/env bash
# Real applications under mpiscope (issue: real applications): Debian's GROMACS (`gmx_mpi
# mdrun`, a box of SPC water with PME) and LAMMPS (`lmp`, a Lennard-Jones liquid), each run
# untraced and traced (`mpiscope trace`) at 1, 2 and 4 ranks, ROUNDS times alternating, on
# this host. Per application and rank count it checks that tracing changed no result
# (GROMACS: the energy file `md.edr` byte for byte, with `-reprod`; LAMMPS: every thermo
# line, printed with 15 digits) and records:
#   - untraced and traced wall time of the job (median) and the overhead;
#   - the trace's size, `mpiscope structure`'s line count, `structure --save`'s size;
#   - the span the replay predicts (end of MPI_Init to MPI_Finalize, the longest rank) as
#     measured in the traced run, and `mpiscope replay`'s prediction of it on a platform
#     calibrated on this host (`mpiscope bench` + `mpiscope calibrate`), with the error, and
#     the same with `--wall-bursts` (compute bursts for their wall time, as traces without
#     CPU times replay);
#     the same span estimated for the untraced run (its wall time less what the traced job
#     spent outside that span) and the error against it;
#   - whether the SimGrid TI export (`mpiscope export --format simgrid-ti`) replays under
#     `smpirun -replay`, and its time against `mpiscope replay` of the same export (both on
#     one XML cluster, as SimGrid reads no mpiscope platform).
# Ranks are bound to cores as `mpiscope replay --bind-to core` models them (`--bind-to
# core:overload-allowed --map-by core`; 4 ranks share the 2 cores of this host, two per
# core, with `mpi_yield_when_idle`). Tables go to target/bench-apps/table.md, every
# measurement to target/bench-apps/runs.csv.
# GROMACS is required (installed when missing); LAMMPS is installed when missing and
# skipped, saying so, when it cannot be.
# Usage: scripts/bench-apps.sh [GMX_STEPS] [ROUNDS] [LAMMPS_STEPS] [PLATFORM]
#   defaults 2000 steps, 3 rounds, 1000 LAMMPS steps; PLATFORM: a calibrated platform to
#   use instead of calibrating this host first.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/apps.sh
STEPS=${1:-2000}
ROUNDS=${2:-3}
LSTEPS=${3:-1000}
PLATFORM=${4:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
root=$PWD
M=$root/target/release/mpiscope
out=$root/target/bench-apps
mkdir -p "$out"

# Installs Debian package $1 when command $2 is missing; fails only if it stays missing.
install_for() {
  command -v "$2" > /dev/null && return 0
  echo "bench-apps: installing $1 (for $2)" >&2
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq > /dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$1" > /dev/null 2>&1 || true
  command -v "$2" > /dev/null
}
install_for gromacs gmx_mpi || { echo "bench-apps: gmx_mpi missing and not installable" >&2; exit 1; }
apps=(gmx)
if install_for lammps lmp; then
  apps+=(lmp)
else
  echo "bench-apps: lmp missing and not installable: LAMMPS skipped" >&2
fi
command -v smpirun > /dev/null || install_for libsimgrid-dev smpirun || true

cargo build --release -q -p mpiscope -p mpiscope-preload-openmpi -p mpiscope-bench
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- Inputs -----------------------------------------------------------------------------
gmx_inputs() {
  local d=$out/gmx-input
  rm -rf "$d" && mkdir -p "$d"
  (
    cd "$d"
    # 2,165 SPC waters in a 4 nm box, minimized (100 steepest-descent steps at most), then
    # NVE molecular dynamics with PME.
    gmx_mpi -quiet solvate -cs spc216 -box 4.0 4.0 4.0 -o conf.gro > solvate.log 2>&1
    waters=$(awk '/Number of solvent molecules/ { print $NF }' solvate.log)
    printf '#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spc.itp"\n\n[ system ]\nwater\n\n[ molecules ]\nSOL %s\n' \
      "$waters" > topol.top
    common="cutoff-scheme = Verlet\ncoulombtype = PME\nrcoulomb = 0.9\nrvdw = 0.9\n"
    printf "integrator = steep\nnsteps = 100\nemtol = 1000\n$common" > em.mdp
    printf "integrator = md\ndt = 0.002\nnsteps = %s\n${common}nstcalcenergy = 10\nnstenergy = 10\nnstlog = 500\ntcoupl = no\npcoupl = no\ngen-vel = yes\ngen-temp = 300\ngen-seed = 1\n" \
      "$STEPS" > md.mdp
    gmx_mpi -quiet grompp -f em.mdp -c conf.gro -p topol.top -o em.tpr > grompp-em.log 2>&1
    gmx_mpi -quiet mdrun -s em.tpr -ntomp 1 -nb cpu -deffnm em > em.log.out 2>&1
    gmx_mpi -quiet grompp -f md.mdp -c em.gro -p topol.top -o topol.tpr > grompp.log 2>&1
    echo "$waters"
  )
}

lmp_inputs() {
  local d=$out/lmp-input
  rm -rf "$d" && mkdir -p "$d"
  apps_lj_input "$d/in.lj" "$LSTEPS"
}

# The command line of application $1 (run in its run directory).
app_cmd() {
  case $1 in
    gmx) echo "gmx_mpi -quiet mdrun -s $out/gmx-input/topol.tpr -ntomp 1 -reprod -nb cpu -deffnm md" ;;
    lmp) echo "lmp -in $out/lmp-input/in.lj -log log.lammps -screen none" ;;
  esac
}

# What must not change: GROMACS's energy file (checksum), LAMMPS's thermo lines (checksum).
app_result() {
  case $1 in
    gmx) sha256sum < "$2/md.edr" | cut -c1-16 ;;
    lmp) sed -n '/^ *Step/,/^Loop time/p' "$2/log.lammps" | grep -v '^Loop time' | sha256sum | cut -c1-16 ;;
  esac
}

now() { date +%s.%N; }

# --- Calibration ------------------------------------------------------------------------
cluster_xml() {
  cat > "$out/cluster.xml" <<'EOF'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-15" speed="1Gf" bw="1GBps" lat="10us"/></zone></platform>
EOF
}
cluster_xml
if [ -z "$PLATFORM" ]; then
  PLATFORM=$out/calibrated.toml
  # Bound as the application runs are; the wake-up delay of ranks sharing a core for the
  # 4-rank runs. Compute bursts keep their traced durations in the replay, so the BLAS
  # kernels are not timed (--no-compute).
  apps_calibrate "$out" "$PLATFORM" --no-compute
fi

# --- Runs -------------------------------------------------------------------------------
# One run of app $1 at $2 ranks, round $3, traced when $4 is "traced": appends a CSV line.
run_one() {
  local app=$1 np=$2 r=$3 mode=$4
  local d=$out/$app/np$np/r$r-$mode
  rm -rf "$d" && mkdir -p "$d"
  local cmd t0 t1
  read -r -a cmd <<< "$(apps_launcher "$np") $(app_cmd "$app")"
  t0=$(now)
  if [ "$mode" = traced ]; then
    (cd "$d" && "$M" trace -q -o trace -- "${cmd[@]}" > run.out 2>&1)
  else
    (cd "$d" && "${cmd[@]}" > run.out 2>&1)
  fi
  t1=$(now)
  local wall result
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  result=$(app_result "$app" "$d")
  if [ "$mode" = traced ]; then
    analyse "$app" "$np" "$r" "$d" "$wall" "$result"
  else
    echo "$app,$np,$r,$mode,$wall,$result,,,,,,,,,," >> "$out/runs.csv"
  fi
}

# The measurements of a traced run in $4: trace, structure, replays.
analyse() {
  local app=$1 np=$2 r=$3 d=$4 wall=$5 result=$6
  local t=$d/trace
  local bytes lines form span pred ti_sg ti_ms calls
  bytes=$(du -sb "$t" | cut -f1)
  lines=$("$M" structure "$t" | wc -l)
  "$M" structure "$t" --save "$d/form.json.gz" -q
  form=$(stat -c %s "$d/form.json.gz")
  "$M" report "$t" --json > "$d/report.json"
  read -r span calls < <(python3 - "$d/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
span = max(p["app_s"] for p in r["per_rank"])
a2a = r["calls"].get("MPI_Alltoall", {}).get("count", 0)
print(f"{span:.6f} {a2a}")
EOF
  )
  pred=$("$M" replay "$t" --platform "$PLATFORM" --mapping "sequential:$np" --bind-to core \
    --json --quiet |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan_s"])')
  pred_wall=$("$M" replay "$t" --platform "$PLATFORM" --mapping "sequential:$np" --bind-to core \
    --wall-bursts --json --quiet |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan_s"])')
  # The TI export, replayed by SimGrid and by mpiscope on one XML cluster.
  "$M" export "$t" --format simgrid-ti -o "$d/ti" -q 2> "$d/ti-notes.txt"
  seq 0 $((np - 1)) | sed 's/^/n/' > "$d/hosts"
  if (cd "$d" && timeout 600 smpirun -np "$np" -platform "$out/cluster.xml" -hostfile hosts \
      -replay ti/index.txt --cfg=network/model:CM02 --cfg=smpi/coll-selector:ompi \
      --cfg=network/optim:Full '--log=smpi_replay.fmt:[%.12d]%e%m%n' > smpirun.txt 2>&1); then
    ti_sg=$(grep 'Simulation time' "$d/smpirun.txt" | tail -1 | sed 's/^\[\([0-9.]*\)\].*/\1/')
  else
    ti_sg="failed($(grep -m1 -o 'CRITICAL.*\|Deadlock.*\|SIGFPE' "$d/smpirun.txt" | tr ',' ' ' || echo exit))"
  fi
  ti_ms=$("$M" replay "$d/ti/index.txt" --platform "$out/cluster.xml" --hostfile "$d/hosts" \
    --json --quiet | python3 -c 'import json, sys; print(json.load(sys.stdin)["makespan_s"])')
  local pme=""
  if [ "$app" = gmx ]; then
    pme=$(awk '/PME 3D-FFT Comm\./ { print $(NF-3) }' "$d/md.log")
  fi
  echo "$app,$np,$r,traced,$wall,$result,$bytes,$lines,$form,$span,$pred,$ti_sg,$ti_ms,$calls,$pme,$pred_wall" \
    >> "$out/runs.csv"
}

echo "app,np,round,mode,wall_s,result,trace_bytes,structure_lines,form_bytes,span_s,predicted_s,ti_simgrid_s,ti_mpiscope_s,alltoall_calls,pme_fft_comm,predicted_wall_bursts_s" \
  > "$out/runs.csv"
for app in "${apps[@]}"; do
  case $app in
    gmx) waters=$(gmx_inputs) ;;
    lmp) lmp_inputs ;;
  esac
  for np in 1 2 4; do
    for r in $(seq "$ROUNDS"); do
      # Alternating, the untraced run first in odd rounds, second in even ones.
      if [ $((r % 2)) = 1 ]; then
        run_one "$app" "$np" "$r" plain
        run_one "$app" "$np" "$r" traced
      else
        run_one "$app" "$np" "$r" traced
        run_one "$app" "$np" "$r" plain
      fi
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out/runs.csv" "$load_before" "$load_after" "$STEPS" "$LSTEPS" "${waters:-?}" "$ROUNDS" \
  > "$out/table.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
load_before, load_after, steps, lsteps, waters, rounds = sys.argv[2:8]
names = {"gmx": f"GROMACS mdrun, {waters} SPC waters, PME, {steps} steps",
         "lmp": f"LAMMPS, LJ liquid, 16,384 atoms, {lsteps} steps"}
med = lambda xs: statistics.median(xs)
def f(x): return float(x)
print(f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after} "
      f"(2 cores, shared with other builds). {rounds} rounds, medians.\n")
print("| application | ranks | untraced (s) | traced (s) | overhead | results | trace | "
      "`structure` lines | `structure --save` |")
print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
groups = {}
for r in rows:
    groups.setdefault((r["app"], int(r["np"])), []).append(r)
for (app, np), rs in sorted(groups.items()):
    plain = [r for r in rs if r["mode"] == "plain"]
    traced = [r for r in rs if r["mode"] == "traced"]
    u = med([f(r["wall_s"]) for r in plain])
    t = med([f(r["wall_s"]) for r in traced])
    results = {r["result"] for r in rs}
    same = "identical" if len(results) == 1 else f"DIFFER ({len(results)} distinct)"
    kib = lambda k: med([f(r[k]) for r in traced]) / 1024
    lines = med([int(r["structure_lines"]) for r in traced])
    print(f"| {names[app]} | {np} | {u:.3f} | {t:.3f} | {100 * (t - u) / u:+.1f}% | {same} | "
          f"{kib('trace_bytes'):.0f} KiB | {lines:.0f} | {kib('form_bytes'):.1f} KiB |")
print()
print("| application | ranks | span, traced run (s) | span, untraced (est., s) | replay (s) | "
      "error vs traced | error vs untraced | replay, wall bursts (s) | its error vs traced | "
      "TI: `smpirun -replay` (s) | TI: `mpiscope replay` (s) | difference |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (app, np), rs in sorted(groups.items()):
    plain = [r for r in rs if r["mode"] == "plain"]
    traced = [r for r in rs if r["mode"] == "traced"]
    span = med([f(r["span_s"]) for r in traced])
    pred = med([f(r["predicted_s"]) for r in traced])
    pred_wall = med([f(r["predicted_wall_bursts_s"]) for r in traced])
    # The untraced span: the untraced wall time less what the traced job spent outside
    # its span (launch, MPI_Init, MPI_Finalize, the trace's writing), per round.
    outside = med([f(r["wall_s"]) - f(r["span_s"]) for r in traced])
    uspan = med([f(r["wall_s"]) for r in plain]) - outside
    sg = [r["ti_simgrid_s"] for r in traced]
    ms = [f(r["ti_mpiscope_s"]) for r in traced]
    if all(not s.startswith("failed") for s in sg):
        diffs = [abs(f(s) - m) / f(s) for s, m in zip(sg, ms)]
        sgs, diff = f"{med([f(s) for s in sg]):.6f}", f"{max(diffs):.1e}"
    else:
        bad = sorted({s for s in sg if s.startswith("failed")})
        sgs, diff = "; ".join(bad), "-"
    print(f"| {names[app]} | {np} | {span:.3f} | {uspan:.3f} | {pred:.3f} | "
          f"{100 * (pred - span) / span:+.1f}% | {100 * (pred - uspan) / uspan:+.1f}% | "
          f"{pred_wall:.3f} | {100 * (pred_wall - span) / span:+.1f}% | {sgs} | "
          f"{med(ms):.6f} | {diff} |")
print()
for (app, np), rs in sorted(groups.items()):
    traced = [r for r in rs if r["mode"] == "traced"]
    if app == "gmx" and np > 1:
        calls = {int(r["alltoall_calls"]) for r in traced}
        pme = {r["pme_fft_comm"] for r in traced}
        print(f"- GROMACS at {np} ranks: MPI_Alltoall calls in the trace {sorted(calls)}, "
              f"md.log's `PME 3D-FFT Comm.` count {sorted(pme)} (per rank: calls / {np}).")
EOF
cat "$out/table.md"
