#!/usr/bin/env bash
# An emulated cluster network on this machine: MPI ranks talk TCP over the loopback of a
# private network namespace whose every packet passes a token bucket (`tc` qdisc tbf) at a
# given rate. Usage (docs/NETLAB.md; measurements in docs/BENCHMARKS.md, "An emulated
# cluster network"):
#
#   netlab.sh up NAME --rate RATE [--burst BYTES] [--mtu BYTES] [--limit BYTES]
#       creates namespace mpiscope-NAME, brings its `lo` up with MTU BYTES (default 9000),
#       and shapes it with tbf at RATE (tc's units: 10gbit, 1gbit, 500mbit, 100mbps; or
#       `unshaped` for none). The burst (default: what RATE sends in 200 us, at least 4
#       packets) must hold a whole packet, hence the lowered MTU. Records what it created in
#       /run/mpiscope-netlab/NAME and prints what it did.
#   netlab.sh run NAME -- COMMAND...
#       runs COMMAND inside the namespace (ip netns exec).
#   netlab.sh mpirun NAME --np N [--flavour openmpi|mpich] [--progress-thread]
#                     [-x VAR[=VALUE]]... [--mca KEY VALUE]... [--launcher-arg ARG]...
#                     -- PROGRAM ARGS...
#       runs PROGRAM on N ranks inside the namespace over TCP only: Open MPI with
#       `--mca pml ob1 --mca btl tcp,self` on `lo`, or MPICH (ch4:ucx) with UCX's tcp
#       transport on `lo` and no shared memory between local ranks. `-x VAR=VALUE` sets a
#       variable in the ranks (not in the launcher), e.g. -x LD_PRELOAD=... for T-NBC.
#       --progress-thread: Open MPI's TCP progress thread (btl_tcp_progress_thread 1,
#       mpi_yield_when_idle 1), MPICH's MPIR_CVAR_ASYNC_PROGRESS; without it, Open MPI moves
#       large messages in stalls well below a shaped rate (docs/NETLAB.md).
#   netlab.sh down NAME [--kill] | down --all [--kill]
#       removes exactly what `up` created: refuses a name without a record, or whose
#       namespace is not the one recorded; refuses while processes run inside unless
#       --kill (SIGTERM, then SIGKILL after 5 s, to those processes by id). Records whose
#       namespace is already gone (stale) are removed too.
#   netlab.sh status
#       lists the namespaces of netlab.sh, with their shaping and the processes inside.
#
# Only ever touches namespaces it created and the loopback inside them: the host's own
# interfaces and qdiscs are left alone. A namespace is ours when its record exists and the
# namespace's `lo` carries the record's token as its alias (set by `up`), so a namespace
# another tool made under the same name is refused. A failed `up` removes what it made.
# Needs root, iproute2 (`ip`, `tc`) and the kernel's tbf qdisc; exits 3 with the reason
# when this machine lacks one of them, 2 on any other error.
set -euo pipefail

statedir=${MPISCOPE_NETLAB_DIR:-/run/mpiscope-netlab}
prefix=mpiscope-

die() {
  echo "netlab.sh: error: $*" >&2
  exit 2
}

unavailable() {
  echo "netlab.sh: unavailable: $*" >&2
  exit 3
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

need_tools() {
  [ "$(id -u)" = 0 ] || unavailable "network namespaces need root (run as root)"
  command -v ip >/dev/null || unavailable "\`ip\` not found (apt-get install iproute2)"
  command -v tc >/dev/null || unavailable "\`tc\` not found (apt-get install iproute2)"
}

check_name() {
  local name=$1
  [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$ ]] ||
    die "bad name '$name': 1 to 31 letters, digits, '_', '.' or '-', starting with a letter or digit"
}

# Bits per second of a tc rate (10gbit, 1.5Gbit, 100mbps, 2gibit; `bps` is bytes per second).
rate_bits() {
  local r=${1,,}
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)(|k|m|g|t|ki|mi|gi|ti)(bit|bps)$ ]] ||
    die "--rate: bad rate '$1' (a number and a unit as tc spells it: 10gbit, 500mbit, 100mbps; or unshaped)"
  local n=${BASH_REMATCH[1]} p=${BASH_REMATCH[3]} u=${BASH_REMATCH[4]}
  awk -v n="$n" -v p="$p" -v u="$u" 'BEGIN {
    m["k"] = 1e3; m["m"] = 1e6; m["g"] = 1e9; m["t"] = 1e12; m[""] = 1
    m["ki"] = 1024; m["mi"] = 1048576; m["gi"] = 1073741824; m["ti"] = 1099511627776
    b = n * m[p] * (u == "bps" ? 8 : 1)
    printf "%.0f\n", b }'
}

# Bytes of a size: a whole number with an optional k/m suffix (1024, as tc counts).
size_bytes() {
  local opt=$1 s=${2,,}
  [[ $s =~ ^([0-9]{1,10})(|b|k|kb|m|mb)$ ]] || die "$opt: bad size '$2' (bytes, or a number with k or m)"
  local n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]} b
  case $u in
    "" | b) b=$((10#$n)) ;;
    k | kb) b=$((10#$n * 1024)) ;;
    m | mb) b=$((10#$n * 1048576)) ;;
  esac
  [ "$b" -le 1073741824 ] || die "$opt: $2 is more than 1 GiB"
  echo "$b"
}

# The value of KEY in record file $1 (lines `key=value`).
field() {
  sed -n "s/^$2=//p" "$1" | head -n 1
}

# The alias of `lo` in namespace $1 (empty when it has none or the namespace is gone).
lo_alias() {
  ip -n "$1" -o link show dev lo 2>/dev/null | sed -n 's/.*\\ *alias \(.*\)$/\1/p' | head -n 1
}

# Checks that NAME is ours and present: its record exists and its namespace carries the
# record's token. Dies otherwise.
check_ours() {
  local name=$1 rec=$statedir/$1 ns=$prefix$1
  [ -f "$rec" ] || die "'$name' was not created by netlab.sh (no record $rec); see \`netlab.sh status\`"
  ip netns list | awk '{print $1}' | grep -qxF -- "$ns" ||
    die "namespace $ns of record $rec is gone; \`netlab.sh down $name\` removes the stale record"
  [ "$(lo_alias "$ns")" = "$(field "$rec" token)" ] ||
    die "namespace $ns is not the one netlab.sh created (its lo does not carry the token of $rec); left alone"
}

# --- up -------------------------------------------------------------------------------

# Set while `up` has made something that must be removed should it fail.
made_ns=""
made_rec=""

undo_up() {
  local status=$?
  if [ "$status" != 0 ]; then
    [ -n "$made_ns" ] && ip netns delete "$made_ns" 2>/dev/null &&
      echo "netlab.sh: up failed: removed namespace $made_ns" >&2
    [ -n "$made_rec" ] && rm -f "$made_rec"
  fi
  return "$status"
}

up() {
  [ $# -ge 1 ] || usage
  local name=$1
  shift
  check_name "$name"
  local rate="" burst="" mtu=9000 limit=""
  while [ $# -gt 0 ]; do
    case $1 in
      --rate) [ $# -ge 2 ] || die "--rate needs a value"; rate=$2; shift 2 ;;
      --burst) [ $# -ge 2 ] || die "--burst needs a value"; burst=$(size_bytes --burst "$2"); shift 2 ;;
      --mtu) [ $# -ge 2 ] || die "--mtu needs a value"; mtu=$(size_bytes --mtu "$2"); shift 2 ;;
      --limit) [ $# -ge 2 ] || die "--limit needs a value"; limit=$(size_bytes --limit "$2"); shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  [ -n "$rate" ] || die "up: --rate is required (e.g. --rate 10gbit, or --rate unshaped)"
  [ "$mtu" -ge 1280 ] && [ "$mtu" -le 65536 ] || die "--mtu $mtu: must be 1280 to 65536 bytes"
  local bits=0
  if [ "$rate" != unshaped ]; then
    bits=$(rate_bits "$rate")
    [ "$bits" -ge 8000 ] || die "--rate $rate: below 1 kbyte/s"
    # A packet on lo is its MTU plus a 14-byte Ethernet header; tbf drops a packet larger
    # than the bucket, so the bucket holds at least 4 of them.
    local packet=$((mtu + 14))
    if [ -z "$burst" ]; then
      burst=$(awk -v b="$bits" -v p="$packet" 'BEGIN { x = b / 8 * 200e-6; if (x < 4 * p) x = 4 * p; printf "%.0f\n", x }')
    fi
    [ "$burst" -ge "$packet" ] ||
      die "--burst $burst: smaller than one packet ($packet bytes at --mtu $mtu); lower --mtu or raise --burst"
    # The queue: 20 ms at the rate, at least 1 MiB.
    if [ -z "$limit" ]; then
      limit=$(awk -v b="$bits" 'BEGIN { x = b / 8 * 20e-3; if (x < 1048576) x = 1048576; printf "%.0f\n", x }')
    fi
  else
    [ -z "$burst$limit" ] || die "--burst and --limit need a --rate (not unshaped)"
  fi
  need_tools
  local ns=$prefix$name rec=$statedir/$name
  [ -e "$rec" ] && die "'$name' is up already (record $rec); \`netlab.sh down $name\` first"
  ip netns list | awk '{print $1}' | grep -qxF -- "$ns" &&
    die "a namespace $ns exists that netlab.sh did not create (no record $rec); left alone"
  mkdir -p "$statedir"
  local token
  token=netlab-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
  trap undo_up EXIT
  ip netns add "$ns" || die "ip netns add $ns failed"
  made_ns=$ns
  # The record first, so that anything made from here on is found by `down`.
  made_rec=$rec
  {
    echo "namespace=$ns"
    echo "token=$token"
    echo "rate=$rate"
    echo "rate_bits=$bits"
    echo "burst=$burst"
    echo "limit=$limit"
    echo "mtu=$mtu"
    echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$rec.tmp.$$"
  mv "$rec.tmp.$$" "$rec"
  ip -n "$ns" link set dev lo alias "$token" || die "could not mark lo of $ns"
  ip -n "$ns" link set dev lo mtu "$mtu" || die "could not set the MTU of lo in $ns to $mtu"
  ip -n "$ns" link set dev lo up || die "could not bring lo of $ns up"
  if [ "$rate" != unshaped ]; then
    if ! tc -n "$ns" qdisc add dev lo root tbf rate "$bits"bit burst "$burst" limit "$limit" 2>"$statedir/.tc.$$"; then
      local why
      why=$(cat "$statedir/.tc.$$")
      rm -f "$statedir/.tc.$$"
      if grep -qi "unknown qdisc\|no such file\|not supported" <<<"$why"; then
        ip netns delete "$ns"
        rm -f "$rec"
        made_ns="" made_rec=""
        unavailable "this kernel has no tbf qdisc: $why"
      fi
      die "tc qdisc add tbf in $ns failed: $why"
    fi
    rm -f "$statedir/.tc.$$"
  fi
  made_ns="" made_rec=""
  trap - EXIT
  echo "netlab.sh: created namespace $ns (record $rec)"
  echo "netlab.sh: lo up, mtu $mtu, address 127.0.0.1"
  if [ "$rate" = unshaped ]; then
    echo "netlab.sh: no shaping"
  else
    echo "netlab.sh: tbf on lo: rate $rate ($bits bit/s), burst $burst bytes, limit $limit bytes"
    echo "netlab.sh: both directions of every exchange share this one bucket"
  fi
}

# --- run, mpirun ------------------------------------------------------------------------

run() {
  [ $# -ge 2 ] && [ "$2" = -- ] || die "usage: netlab.sh run NAME -- COMMAND..."
  local name=$1
  shift 2
  [ $# -ge 1 ] || die "run: no command after --"
  check_name "$name"
  need_tools
  check_ours "$name"
  exec ip netns exec "$prefix$name" "$@"
}

# The launcher command for `mpirun`'s arguments, into the array `launch`.
launch=()
mpirun_cmd() {
  local name=$1
  shift
  local np="" flavour=openmpi thread=0
  local -a xs=() mcas=() extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --np | -np | -n) [ $# -ge 2 ] || die "--np needs a value"; np=$2; shift 2 ;;
      --flavour | --flavor) [ $# -ge 2 ] || die "--flavour needs a value"; flavour=$2; shift 2 ;;
      --progress-thread) thread=1; shift ;;
      -x) [ $# -ge 2 ] || die "-x needs VAR or VAR=VALUE"; xs+=("$2"); shift 2 ;;
      --mca) [ $# -ge 3 ] || die "--mca needs KEY VALUE"; mcas+=("$2" "$3"); shift 3 ;;
      --launcher-arg) [ $# -ge 2 ] || die "--launcher-arg needs a value"; extra+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) die "mpirun: unknown option '$1' (the program comes after --)" ;;
    esac
  done
  [ $# -ge 1 ] || die "mpirun: no program after --"
  [[ $np =~ ^[1-9][0-9]{0,4}$ ]] || die "mpirun: --np must be a positive number (got '${np}')"
  local x
  for x in "${xs[@]}"; do
    [[ $x =~ ^[A-Za-z_][A-Za-z0-9_]*(=.*)?$ ]] || die "-x '$x': want VAR or VAR=VALUE"
  done
  local -a cmd
  case $flavour in
    openmpi)
      command -v mpirun.openmpi >/dev/null || die "mpirun.openmpi not found (apt-get install openmpi-bin)"
      # pml ob1 over btl tcp,self: no vader (shared memory) and no UCX; osc without the
      # shared-memory and UCX components; the runtime's own traffic on lo too.
      cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np"
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo --mca osc '^sm,ucx')
      [ "$thread" = 0 ] || cmd+=(--mca btl_tcp_progress_thread 1 --mca mpi_yield_when_idle 1)
      local i
      for ((i = 0; i < ${#mcas[@]}; i += 2)); do cmd+=(--mca "${mcas[i]}" "${mcas[i + 1]}"); done
      for x in "${xs[@]}"; do cmd+=(-x "$x"); done
      ;;
    mpich)
      command -v mpirun.mpich >/dev/null || die "mpirun.mpich not found (apt-get install mpich)"
      [ ${#mcas[@]} = 0 ] || die "--mca is for Open MPI (use -x VAR=VALUE for MPICH's MPIR_CVAR_*)"
      # Hydra on lo; ch4 sends between local ranks through its netmod (NOLOCAL), and UCX
      # uses its tcp transport on lo only.
      cmd=(mpirun.mpich -np "$np" -iface lo -genv MPIR_CVAR_NOLOCAL 1
        -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES lo)
      [ "$thread" = 0 ] || cmd+=(-genv MPIR_CVAR_ASYNC_PROGRESS 1)
      for x in "${xs[@]}"; do
        if [[ $x == *=* ]]; then
          cmd+=(-genv "${x%%=*}" "${x#*=}")
        else
          cmd+=(-genv "$x" "${!x-}")
        fi
      done
      ;;
    *) die "--flavour: '$flavour' is not openmpi or mpich" ;;
  esac
  launch=("${cmd[@]}" "${extra[@]}" "$@")
}

mpirun_in() {
  [ $# -ge 1 ] || die "usage: netlab.sh mpirun NAME --np N [--flavour openmpi|mpich] -- PROGRAM ARGS"
  local name=$1
  shift
  check_name "$name"
  mpirun_cmd "$name" "$@"
  need_tools
  check_ours "$name"
  exec ip netns exec "$prefix$name" "${launch[@]}"
}

# --- down, status -----------------------------------------------------------------------

# Process ids running in namespace $1.
ns_pids() {
  ip netns pids "$1" 2>/dev/null | tr '\n' ' ' | sed 's/ *$//'
}

# Removes NAME, whose record exists. $2: `kill` to end processes inside first.
take_down() {
  local name=$1 kill=$2 rec=$statedir/$1 ns=$prefix$1
  if ! ip netns list | awk '{print $1}' | grep -qxF -- "$ns"; then
    rm -f "$rec"
    echo "netlab.sh: namespace $ns was already gone: removed its stale record $rec"
    return 0
  fi
  [ "$(lo_alias "$ns")" = "$(field "$rec" token)" ] ||
    die "namespace $ns is not the one netlab.sh created (its lo does not carry the token of $rec); left alone"
  local pids
  pids=$(ns_pids "$ns")
  if [ -n "$pids" ]; then
    [ "$kill" = kill ] || die "processes run inside $ns (pids: $pids); end them, or \`netlab.sh down $name --kill\`"
    echo "netlab.sh: sending SIGTERM to the processes inside $ns: $pids"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    local i
    for i in $(seq 50); do
      [ -z "$(ns_pids "$ns")" ] && break
      sleep 0.1
    done
    pids=$(ns_pids "$ns")
    if [ -n "$pids" ]; then
      echo "netlab.sh: sending SIGKILL to: $pids"
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.2
    fi
  fi
  # The qdisc and lo's settings live in the namespace and go with it.
  ip netns delete "$ns" || die "ip netns delete $ns failed"
  rm -f "$rec"
  echo "netlab.sh: removed namespace $ns (with its lo and qdisc) and record $rec"
}

# Removes the records whose namespace is gone (except NAME $1, handled by the caller).
sweep_stale() {
  local rec name
  [ -d "$statedir" ] || return 0
  for rec in "$statedir"/*; do
    [ -f "$rec" ] || continue
    name=${rec##*/}
    [ "$name" = "${1:-}" ] && continue
    [[ $name == *.tmp.* ]] && continue
    if ! ip netns list | awk '{print $1}' | grep -qxF -- "$prefix$name"; then
      rm -f "$rec"
      echo "netlab.sh: namespace $prefix$name was gone: removed its stale record $rec"
    fi
  done
}

down() {
  local all=0 kill="" name=""
  while [ $# -gt 0 ]; do
    case $1 in
      --all) all=1; shift ;;
      --kill) kill=kill; shift ;;
      -*) die "down: unknown option '$1'" ;;
      *) [ -z "$name" ] || die "down: one NAME (or --all)"; name=$1; shift ;;
    esac
  done
  [ "$all" = 1 ] || [ -n "$name" ] || die "usage: netlab.sh down NAME [--kill] | down --all [--kill]"
  [ "$all" = 1 ] && [ -n "$name" ] && die "down: NAME or --all, not both"
  need_tools
  if [ "$all" = 1 ]; then
    local rec failed=0
    [ -d "$statedir" ] || { echo "netlab.sh: nothing to take down"; return 0; }
    for rec in "$statedir"/*; do
      [ -f "$rec" ] || continue
      [[ ${rec##*/} == *.tmp.* ]] && continue
      (take_down "${rec##*/}" "$kill") || failed=1
    done
    [ "$failed" = 0 ] || exit 2
    return 0
  fi
  check_name "$name"
  [ -f "$statedir/$name" ] ||
    die "'$name' was not created by netlab.sh (no record $statedir/$name); refusing to touch namespace $prefix$name"
  take_down "$name" "$kill"
  sweep_stale "$name"
}

status() {
  need_tools
  local rec name ns any=0 present pids
  if [ -d "$statedir" ]; then
    for rec in "$statedir"/*; do
      [ -f "$rec" ] || continue
      [[ ${rec##*/} == *.tmp.* ]] && continue
      any=1
      name=${rec##*/}
      ns=$prefix$name
      present=no
      ip netns list | awk '{print $1}' | grep -qxF -- "$ns" && present=yes
      if [ "$present" = no ]; then
        echo "$name: namespace $ns is gone (stale record; \`netlab.sh down $name\` removes it)"
        continue
      fi
      if [ "$(lo_alias "$ns")" != "$(field "$rec" token)" ]; then
        echo "$name: namespace $ns is not the one recorded (not ours; left alone)"
        continue
      fi
      pids=$(ns_pids "$ns")
      echo "$name: namespace $ns, rate $(field "$rec" rate), burst $(field "$rec" burst), mtu $(field "$rec" mtu), since $(field "$rec" created), processes: ${pids:-none}"
      tc -n "$ns" -s qdisc show dev lo | sed 's/^/    /'
    done
  fi
  [ "$any" = 1 ] || echo "netlab.sh: no namespaces (records in $statedir)"
  local other
  other=$(ip netns list | awk '{print $1}' | grep "^$prefix" | while read -r ns; do
    [ -f "$statedir/${ns#"$prefix"}" ] || echo "$ns"
  done)
  [ -z "$other" ] || echo "not ours (no record; left alone): $(echo "$other" | tr '\n' ' ')"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
  up) up "$@" ;;
  run) [ $# -ge 1 ] || usage; run "$@" ;;
  mpirun) mpirun_in "$@" ;;
  down) down "$@" ;;
  status) status ;;
  -h | --help | help) usage ;;
  *) die "unknown command '$cmd' (up, run, mpirun, down, status)" ;;
esac
