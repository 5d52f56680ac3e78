#!/usr/bin/env bash
# The HPL skeleton against real HPL on this host (issue: Plan, "Validation against real HPL").
#
# 1. Calibrates this host unless PLATFORM is given: `mpiscope bench` (SEND & RECV sweep,
#    eager and message-rate probes, VECTOR SEND for strided panels, COLD SEND for large
#    messages from memory, 2 ranks bound; SIGNAL WITH BUSY CORES with 4 ranks bound 2 per
#    core, for the oversubscribed 2 x 2) then `mpiscope calibrate` (network factors with the
#    cold rate for large messages, the pack cost of strided messages, the oversubscribed
#    wake-up delay, and dgemm/dtrsm/panel/row gather timed on one thread), into
#    target/bench-hpl/.
# 2. Reads the real runs from target/bench-hpl/real.csv (scripts/bench-hpl-real.sh: hpcc's
#    HPL at 1x1, 1x2, 2x1, 2x2 and several N, several rounds) and takes the median time per
#    (P, Q, N).
# 3. Runs `mpiscope hpl target/bench-hpl/HPL.dat` (the same configurations) on the calibrated
#    platform, all ranks on its one host bound to cores as in the real runs, and prints per
#    (P, Q, N): measured median, min and max, predicted time, and the error of the
#    prediction against the median.
# Usage: scripts/bench-hpl-validate.sh [PLATFORM]
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench-hpl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ ! -s "$out/real.csv" ] || [ ! -s "$out/HPL.dat" ]; then
  echo "no measurements: run scripts/bench-hpl-real.sh first" >&2
  exit 1
fi
cargo build --release -q -p mpiscope -p mpiscope-bench
platform=${1:-}
if [ -z "$platform" ]; then
  platform=$out/calibrated.toml
  # Bound as the real runs are. VECTOR SEND has fast phases on this VM (4.9-7 GB/s for
  # minutes, else 1.9-2.2) that HPL's panels do not show: the pack cost comes from the
  # slowest of the runs bench-hpl-real.sh took between the real runs, when there are some.
  target/release/mpiscope bench -np 2 --bind-to core --bytes m8 M4194304 K4 \
    --only send_recv,eager_send,message_rate,vector_send,cold_send T100 R3 --json \
    --output "$out/p2p.json"
  target/release/mpiscope bench -np 4 --bind-to core --only busy_signal T100 --json \
    --output "$out/wake-up.json"
  strided=()
  for f in "$out"/strided-*.json; do
    if [ -s "$f" ]; then strided+=(--strided "$f"); fi
  done
  target/release/mpiscope calibrate "$out/p2p.json" --wake-up "$out/wake-up.json" \
    "${strided[@]}" -o "$platform" > "$out/calibrate.txt"
fi
target/release/mpiscope hpl "$out/HPL.dat" --platform "$platform" --bind-to core \
  > "$out/predicted.txt"
# Predicted WR lines: T/V N NB P Q Time Gflops (time from Gflops: HPL prints 2 decimals).
awk '$1 ~ /^WR/ && NF == 7 { n = $2; t = (2 / 3 * n * n * n + 1.5 * n * n) / ($7 * 1e9)
    printf "%s,%s,%s,%.6f\n", $4, $5, n, t }' "$out/predicted.txt" \
  > "$out/predicted.csv"
echo "   P x Q       N   measured median (min-max) s   predicted s    error"
tail -n +2 "$out/real.csv" | awk -F, '{ print $3 "," $4 "," $5 "," $7 }' | sort -t, -k1,1n -k2,2n -k3,3n -k4,4g |
  awk -F, -v pred="$out/predicted.csv" '
    BEGIN { while ((getline line < pred) > 0) { split(line, f, ","); p[f[1] "," f[2] "," f[3]] = f[4] } }
    { key = $1 "," $2 "," $3; t[key, ++n[key]] = $4; if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
    END {
      for (i = 1; i <= k; i++) {
        key = order[i]; c = n[key]
        med = (c % 2) ? t[key, (c + 1) / 2] : (t[key, c / 2] + t[key, c / 2 + 1]) / 2
        split(key, f, ",")
        if (key in p) err = sprintf("%+6.1f%%", (p[key] - med) / med * 100); else err = "   n/a"
        printf "%4s x %-3s %7s   %8.3f (%.3f-%.3f)          %10s   %s\n", f[1], f[2], f[3], med, t[key, 1], t[key, c], (key in p) ? p[key] : "-", err
      }
    }'
