#!/usr/bin/env bash
# Closing the loop (issue: Measure): calibrate the simulator on this host from a SEND & RECV
# sweep (seed method, one round trip per sample), with EAGER SEND, MESSAGE RATE and REDUCE
# LOCAL (the reduction operator's cost), then measure the collectives, trace a second run,
# replay it on the calibrated platform and print measured against predicted.
# Usage: scripts/bench-loop.sh [NP] [ITERATIONS] [COLLECTIVES]
# COLLECTIVES: the replay's decision rules (`ompi`, the default, or `openmpi4`, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
NP=${1:-2}
T=${2:-100}
SEL=${3:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release -q -p mpiscope -p mpiscope-bench
out=target/bench-loop/np$NP${SEL:+-$SEL}
mkdir -p "$out"
target/release/mpiscope bench -np "$NP" --bytes m8 M4194304 K4 --only send_recv,eager_send,message_rate,reduce_local "T$T" \
  --json --output "$out/p2p.json"
target/release/mpiscope calibrate "$out/p2p.json" -o "$out/platform.toml" | tee "$out/calibrate.txt"
target/release/mpiscope bench -np "$NP" --predict "$out/platform.toml" --keep "$out/loop" --force \
  ${SEL:+--collectives "$SEL"} \
  --bytes m8 M262144 K8 "T$T" --only allreduce,reduce,broadcast,gather,allgather,alltoall,send_recv \
  | tee "$out/comparison.txt"
