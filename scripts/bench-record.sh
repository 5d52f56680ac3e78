#!/usr/bin/env bash
# Recorder overhead on a tight MPI_Iprobe loop (issue: Record, "Benchmark").
#
# Interleaves, ROUNDS times, three runs of bench/iprobe_loop.c at one rank under Open MPI:
# untraced, with a minimal rdtsc wrapper (the floor any timing tracer pays), and traced by
# mpiscope; reports the median ns/call of each and the added cost, and the trace bytes per
# event. Usage: scripts/bench-record.sh [CALLS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${1:-2000000}
ROUNDS=${2:-7}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release -q -p mpiscope -p mpiscope-preload-openmpi
out=target/bench-record
mkdir -p "$out"
mpicc -O2 -o "$out/iprobe_loop" bench/iprobe_loop.c
mpicc -O2 -shared -fPIC -o "$out/libminimal.so" bench/minimal_wrapper.c
run() { # prints the median of the repetitions of one run
  "$@" 2>/dev/null | awk '/^rep/ {print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
launch="mpirun --allow-run-as-root -np 1 --mca btl self"
: > "$out/samples.txt"
for r in $(seq "$ROUNDS"); do
  u=$(run $launch "$out/iprobe_loop" "$CALLS" 5)
  m=$(run $launch -x LD_PRELOAD="$PWD/$out/libminimal.so" "$out/iprobe_loop" "$CALLS" 5)
  rm -rf "$out/trace"
  t=$(run target/release/mpiscope trace --force -o "$out/trace" -- $launch "$out/iprobe_loop" "$CALLS" 5)
  bytes=$(cat "$out"/trace/rank-*.mpst | wc -c)
  echo "$u $m $t $bytes" >> "$out/samples.txt"
  echo "round $r: untraced $u ns, minimal wrapper $m ns, mpiscope $t ns per call; trace $bytes bytes"
done
events=$(( CALLS * 5 ))
awk -v ev="$events" '
  { u[NR]=$1; m[NR]=$2; t[NR]=$3; du[NR]=$3-$1; dm[NR]=$2-$1; b[NR]=$4 }
  function med(x, n,   i, j, s, tmp) { for (i=1;i<=n;i++) s[i]=x[i]; for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (s[j]<s[i]) {tmp=s[i]; s[i]=s[j]; s[j]=tmp}; return s[int((n+1)/2)] }
  function lo(x, n,   i, m) { m=x[1]; for (i=2;i<=n;i++) if (x[i]<m) m=x[i]; return m }
  END {
    n=NR
    printf "median over %d rounds (%d calls per run):\n", n, ev
    printf "  untraced          %7.1f ns/call (min %.1f)\n", med(u, n), lo(u, n)
    printf "  minimal wrapper   %7.1f ns/call (min %.1f)  (+%.1f ns median: two rdtsc reads and a store)\n", med(m, n), lo(m, n), med(dm, n)
    printf "  mpiscope          %7.1f ns/call (min %.1f)  (+%.1f ns median added per call)\n", med(t, n), lo(t, n), med(du, n)
    printf "  trace size        %7.2f bytes per event (whole files, headers included)\n", med(b, n) / ev
  }' "$out/samples.txt"
