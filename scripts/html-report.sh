#!/usr/bin/env bash
# The HTML report at two scales, measured and photographed: the bundled example (4 ranks,
# traced for real) and a synthetic 1,024-rank stencil of about 10 M events
# (crates/analyze/examples/synthetic_stencil.rs). Writes the screenshots into docs/images/
# and prints each page's size, the time `report --html` took, and Chromium's load time (the
# page writes performance.now() marks into its DOM: data-script-ms, data-load-ms).
# Usage: scripts/html-report.sh [OUT_DIR]   (default target/html-report)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/html-report}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cargo build --release -p mpiscope -p mpiscope-preload-openmpi
cargo build --release -p mpiscope-analyze --example synthetic_stencil
mkdir -p "$out" docs/images
bin=target/release/mpiscope
if [ ! -d "$out/example" ]; then
  mpicc -g -O2 -o "$out/halo" examples/halo.c -lm
  "$bin" trace -o "$out/example" -- mpirun --allow-run-as-root --oversubscribe -np 4 "$out/halo" 200
fi
if [ ! -d "$out/stencil1024" ]; then
  target/release/examples/synthetic_stencil "$out/stencil1024" 1024 1900
fi
for run in example stencil1024; do
  page="$out/$run.html"
  start=$(date +%s.%N)
  "$bin" report "$out/$run" --force --html "$page" > /dev/null
  took=$(echo "$(date +%s.%N) - $start" | bc)
  dom=$(chromium --headless=new --no-sandbox --disable-gpu --virtual-time-budget=60000 \
    --dump-dom "file://$PWD/$page#selftest" 2>/dev/null)
  marks=$(grep -o '<body[^>]*>' <<< "$dom")
  selftest=$(grep -o 'id="selftest"[^>]*>[^<]*' <<< "$dom")
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=60000 \
    --window-size=1400,2000 --screenshot="$PWD/docs/images/report-$run.png" "file://$PWD/$page" 2>/dev/null
  echo "$run: $(stat -c %s "$page") bytes, report --html ${took} s; $marks; $selftest"
done
