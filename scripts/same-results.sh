#!/usr/bin/env bash
# Simulated results of two mpiscope builds, side by side: after a refactoring of the
# simulator, the CLI or the workloads, every prediction must be bit-identical.
#
#   scripts/same-results.sh OLD/mpiscope NEW/mpiscope [WORKDIR]
#
# One trace of the bundled example (recorded once, with NEW) and the C test programs of the
# differential tests are replayed by both builds on both bundled platforms with every
# network model, both collective selectors, a forced algorithm, an eager threshold, core
# binding and random placement, from the run directory, its structural form and its TI
# export; the HPL skeleton runs the bundled inputs at small sizes with each model; the
# what-if study runs on the trace. The JSON outputs are compared byte for byte, with the
# fields that measure the host (wall-clock time, solver work rates) taken out.
# Prints one line per case and exits 1 at the first difference it finds (it lists them all).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
new=$(realpath "$2")
work=${3:-target/same-results}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$work"
work=$(realpath "$work")

# The recorded inputs, made once with the new build.
if [ ! -d "$work/halo" ]; then
  mpicc -g -O2 -o "$work/halo.bin" examples/halo.c -lm
  "$new" trace -o "$work/halo" -- mpirun -np 4 "$work/halo.bin" 60 >/dev/null
fi
inputs=("$work/halo")
for p in crates/sim/tests/programs/*.c; do
  name=$(basename "$p" .c)
  if [ ! -d "$work/$name" ]; then
    mpicc -g -O2 -o "$work/$name.bin" "$p" -lm
    "$new" trace -o "$work/$name" -- mpirun -np 4 "$work/$name.bin" >/dev/null
  fi
  inputs+=("$work/$name")
done
for dir in "${inputs[@]}"; do
  [ -f "$dir.structure.json" ] || "$new" structure "$dir" --save "$dir.structure.json" >/dev/null
  [ -d "$dir.ti" ] || "$new" export "$dir" --format simgrid-ti -o "$dir.ti" >/dev/null 2>&1
done

# Drops what measures the host running the simulation, not the simulated run, and keys
# that only repeat another.
strip() {
  python3 -c '
import json, sys
HOST = ("wall", "elapsed", "per_s", "rate", "seconds_taken", "schema")
# Keys that repeat another one under a second name (events: the count of actions, which
# is compared), absent from older builds.
SAME_AS = ("events",)
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()
                if k not in SAME_AS and not any(h in k for h in HOST)}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
text = sys.stdin.read()
try:
    print(json.dumps(clean(json.loads(text)), sort_keys=True, indent=1))
except ValueError:
    print(text)
'
}

fail=0
cases=0
check() { # name, then the arguments of mpiscope
  local name=$1
  shift
  local a b
  a=$("$old" "$@" 2>&1 | strip) || true
  b=$("$new" "$@" 2>&1 | strip) || true
  cases=$((cases + 1))
  if [ "$a" == "$b" ] && [ "${b:0:1}" != "{" ] && [ "${b:0:1}" != "[" ]; then
    echo "same, but not a result: $name: ${b:0:200}"
    fail=1
  elif [ "$a" == "$b" ]; then
    echo "same  $name"
  else
    echo "DIFF  $name: mpiscope $*"
    diff <(echo "$a") <(echo "$b") | head -20
    fail=1
  fi
}

platforms=(examples/platforms/cluster-16.xml examples/platforms/fat-tree-64.xml)
for dir in "${inputs[@]}"; do
  base=$(basename "$dir")
  for form in "$dir" "$dir.structure.json" "$dir.ti/index.txt"; do
    [ -e "$form" ] || continue
    f=$(basename "$form")
    for plat in "${platforms[@]}"; do
      p=$(basename "$plat" .xml)
      for net in flow smpi loggp; do
        check "$base $f $p $net" replay "$form" --platform "$plat" --network "$net" --json --quiet
      done
    done
    plat=${platforms[0]}
    check "$base $f mpich collectives" replay "$form" --platform "$plat" --collectives mpich --json --quiet
    check "$base $f forced bcast" replay "$form" --platform "$plat" --algorithm bcast=binomial_tree --json --quiet
    check "$base $f eager 0" replay "$form" --platform "$plat" --eager-threshold 0 --json --quiet
    check "$base $f bound, random" replay "$form" --platform "${platforms[1]}" --bind-to core \
      --mapping random:7 --json --quiet
  done
done

source scripts/lib/hpl-dat.sh
hpl_dat "3000 6000" 64 "2 4" "4 4" >"$work/HPL.dat"
for net in flow smpi loggp; do
  check "hpl 8 and 16 ranks $net" hpl "$work/HPL.dat" --platform "${platforms[1]}" --network "$net" --json
  check "hpl 8 and 16 ranks $net, pivots and polls as HPL" hpl "$work/HPL.dat" \
    --platform "${platforms[0]}" --network "$net" --pivots messages --polls chunks --json
done

rm -rf "$work/plan-old" "$work/plan-new"
"$old" plan examples/studies/what-if.toml --trace "$work/halo" --out "$work/plan-old" --quiet >/dev/null 2>&1 || true
"$new" plan examples/studies/what-if.toml --trace "$work/halo" --out "$work/plan-new" --quiet >/dev/null 2>&1 || true
cases=$((cases + 1))
# Without the column sim_wall_s: the host's time to simulate each point.
without_wall() {
  python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, h in enumerate(rows[0]) if h != "sim_wall_s"] if rows else []
for r in rows:
    print(",".join(r[i] for i in keep if i < len(r)))
' "$1"
}
if [ -s "$work/plan-new/results.csv" ] &&
  diff -q <(without_wall "$work/plan-old/results.csv") <(without_wall "$work/plan-new/results.csv") >/dev/null; then
  echo "same  plan what-if.toml (results.csv)"
else
  echo "DIFF  plan what-if.toml (results.csv)"
  diff <(without_wall "$work/plan-old/results.csv") <(without_wall "$work/plan-new/results.csv") | head -20
  fail=1
fi

echo "$cases cases, $([ $fail = 0 ] && echo 'all identical' || echo 'some differ')"
exit $fail
