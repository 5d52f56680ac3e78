#!/usr/bin/env bash
# One measurement, several models: replays the trace that scripts/bench-loop.sh kept
# (target/bench-loop/DIR/loop) on variants of its calibrated platform and prints, per
# operation and length, the measured median next to each variant's prediction, so that a
# change of the model is seen apart from the noise of the measurement (the predictions use
# `mpiscope bench --predict`'s matching: slowest rank's mean per call of the timed loop's
# callsite; SEND & RECV: the slowest rank's send and receive time per round trip).
#   without-reduction: the platform without `mpiscope/reduction` (reductions free)
#   calibrated:        the platform as calibrated
#   openmpi4:          the platform as calibrated, `--collectives openmpi4`
# Usage: scripts/bench-loop-variants.sh DIR   (e.g. target/bench-loop/np2)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/bench-loop-variants.sh DIR}
np=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["np"])' "$dir/loop/results.json")
grep -v '^"mpiscope/reduction"' "$dir/platform.toml" >"$dir/platform-without-reduction.toml"
replay() {
  target/release/mpiscope replay "$dir/loop/run" --platform "$1" --mapping "sequential:$np" \
    --callsites-by-size --json --quiet "${@:2}" >"$dir/variant-$VARIANT.json"
}
VARIANT=without-reduction replay "$dir/platform-without-reduction.toml"
VARIANT=calibrated replay "$dir/platform.toml"
VARIANT=openmpi4 replay "$dir/platform.toml" --collectives openmpi4
python3 - "$dir" <<'PY'
import json, sys
from collections import defaultdict
d = sys.argv[1]
bench = json.load(open(f"{d}/loop/results.json"))
p = bench["params"]
per_rank = max(p["r"], 1) * (p["warmup"] + p["long_iters"] * max(p["reps"], 1))
timed = max(p["r"], 1) * p["long_iters"] * max(p["reps"], 1)
np_ = bench["np"]
fns = {"allreduce": ["MPI_Allreduce"], "reduce": ["MPI_Reduce"], "broadcast": ["MPI_Bcast"],
       "gather": ["MPI_Gather"], "allgather": ["MPI_Allgather"], "alltoall": ["MPI_Alltoall"],
       "send_recv": ["MPI_Send", "MPI_Recv"]}
variants = ["without-reduction", "calibrated", "openmpi4"]
sites = {v: json.load(open(f"{d}/variant-{v}.json"))["callsites"] for v in variants}
def sized(v, f, calls):
    by = defaultdict(list)
    for s in sites[v]:
        if s.get("function") == f:
            by[s.get("bytes", 0)].append(s)
    return [g for _, g in sorted(by.items()) if sum(s["calls"] for s in g) == calls]
rows = {}
for r in bench["results"]:
    if r.get("skipped") is None and r.get("ints") is not None and r["key"] in fns:
        rows[(r["key"], r["ints"])] = r
print("# MEASURED: MPITEST's corrected median; ALONE: the operation alone (--in-call), when measured;")
print("# per model: predicted, error against MEASURED / against ALONE")
print(f"{'OPERATION':<14} {'N(int)':>8} {'MEASURED':>10} {'ALONE':>10} " + " ".join(f"{v:>32}" for v in variants))
within = {v: 0 for v in variants}
within_alone = {v: 0 for v in variants}
for (key, ints), r in rows.items():
    lengths = sorted({x["ints"] for x in bench["results"] if x["key"] == key and x.get("skipped") is None})
    i = lengths.index(ints)
    m = r["time"]["median"]
    alone = (r.get("in_call") or {}).get("median")
    cells = []
    for v in variants:
        f = fns[key]
        if len(f) == 1:
            g = sized(v, f[0], np_ * per_rank)
            pred = max([s["slowest_rank_mean_s"] for s in g[i] if s["calls"] >= timed], default=0.0) if len(g) == len(lengths) else None
        else:
            parts = [sized(v, x, 2 * per_rank) for x in f]
            pred = None
            if all(len(x) == len(lengths) for x in parts):
                # The slowest rank's send and receive time per round trip.
                per = defaultdict(float)
                for part in parts:
                    for s in part[i]:
                        per[s["slowest_rank"]] += s["slowest_rank_mean_s"]
                pred = max(per.values())
        if pred is None:
            cells.append(f"{'-':>32}")
        else:
            e = pred / m - 1
            within[v] += abs(e) <= 0.15
            ea = "-" if alone is None else f"{(pred / alone - 1) * 100:+.1f}%"
            within_alone[v] += alone is not None and abs(pred / alone - 1) <= 0.15
            cells.append(f"{pred * 1e6:>10.3f} us {e * 100:+8.1f}% / {ea:>8}")
    a = "-" if alone is None else f"{alone * 1e6:.3f}"
    print(f"{r['operation']:<14} {ints:>8} {m * 1e6:>7.3f} us {a:>10} " + " ".join(cells))
print("within 15% of MEASURED: " + ", ".join(f"{v} {within[v]} of {len(rows)}" for v in variants))
print("within 15% of ALONE: " + ", ".join(f"{v} {within_alone[v]} of {len(rows)}" for v in variants))
PY
