#!/usr/bin/env bash
# The main job end to end on the bundled example: build mpiscope, trace a 4-rank MPI program
# under Open MPI, report on it (tables and an HTML page), recover its loop structure, show its
# first events, and replay it on modeled platforms.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cargo build --release
mkdir -p target/demo
mpicc -g -O2 -o target/demo/halo examples/halo.c -lm

echo "== mpiscope trace -o target/demo/trace -- mpirun -np 4 target/demo/halo"
target/release/mpiscope trace --force -o target/demo/trace -- \
  mpirun --allow-run-as-root --oversubscribe -np 4 target/demo/halo 200
echo
echo "== mpiscope report target/demo/trace --html target/demo/report.html"
target/release/mpiscope report target/demo/trace --html target/demo/report.html
echo
echo "== mpiscope structure target/demo/trace"
target/release/mpiscope structure target/demo/trace
echo
echo "== mpiscope dump target/demo/trace --rank 1 --limit 12 --symbols"
target/release/mpiscope dump target/demo/trace --rank 1 --limit 12 --symbols
echo
echo "== mpiscope replay target/demo/trace --platform examples/platforms/cluster-16.xml"
target/release/mpiscope replay target/demo/trace --platform examples/platforms/cluster-16.xml --quiet
echo
echo "== the same run on a 64-host fat tree, ranks spread at random over the hosts"
target/release/mpiscope replay target/demo/trace --platform examples/platforms/fat-tree-64.xml \
  --mapping random:1 --quiet --json | grep makespan_s
echo
echo "== mpiscope plan examples/studies/what-if.toml --trace target/demo/trace: 10x faster or slower nodes, links, latency"
rm -rf target/demo/what-if
target/release/mpiscope plan examples/studies/what-if.toml --trace target/demo/trace \
  --out target/demo/what-if --quiet
cat target/demo/what-if/results.csv
