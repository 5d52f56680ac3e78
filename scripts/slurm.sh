#!/usr/bin/env bash
# A one-machine SLURM (Debian's slurm-wlm) for tests: `scripts/slurm.sh up|down|status`.
#
#   up      installs slurm-wlm and munge when missing, writes a minimal configuration into a
#           private directory, starts munged, slurmctld and slurmd there, and waits until
#           `sinfo` shows this machine's node idle. Does nothing when that SLURM is up.
#   down    stops the daemons it started (by the process ids in their pid files) and removes
#           the private directory. Does nothing when there is none.
#   status  says whether it is up (exit 0) or not (exit 1), with `sinfo`'s view.
#
# Nothing goes to /etc or /var: the configuration, munge's key and socket, the controller's
# state, slurmd's spool and every log live in the private directory,
# $MPISCOPE_SLURM_DIR (default ${TMPDIR:-/tmp}/mpiscope-slurm). The client tools and the
# daemons find the configuration through SLURM_CONF:
#
#   export SLURM_CONF=$MPISCOPE_SLURM_DIR/slurm.conf   (what `up` prints last)
#
# The controller listens on $MPISCOPE_SLURM_PORT (default 16817) and slurmd on the port after
# it, so a site's own SLURM (6817, 6818) is left alone. The node is `hostname -s` with
# `nproc` CPUs, the root user runs everything (as in CI), processes are tracked without
# cgroups (proctrack/linuxproc), and KillWait is 5 s: at a job's time limit, or on
# `scancel`, its processes get SIGTERM and, 5 s later, SIGKILL.
#
# Some machines cannot run slurmd (no /proc of their own, a sandbox that refuses its
# sockets): `up` then exits 3 with the reason and the daemons' logs, and the SLURM tests
# (crates/cli/tests/cli/slurm.rs) pass only after writing that reason to
# target/slurm-unavailable.txt.
set -euo pipefail

dir=${MPISCOPE_SLURM_DIR:-${TMPDIR:-/tmp}/mpiscope-slurm}
port=${MPISCOPE_SLURM_PORT:-16817}
conf=$dir/slurm.conf
marker=$dir/.mpiscope-slurm
export SLURM_CONF=$conf

die() {
  echo "slurm.sh: error: $*" >&2
  exit 2
}

# A daemon that could not start on this machine: the reason and the logs' last lines, then
# what was started is stopped and removed; exit 3.
unavailable() {
  echo "slurm.sh: unavailable: $*" >&2
  for log in "$dir"/log/*.log "$dir"/log/*.out; do
    [ -s "$log" ] || continue
    echo "--- $log (last lines)" >&2
    tail -n 15 "$log" >&2
  done
  down quiet
  exit 3
}

# The process id in pid file $1 when that process runs, else nothing.
running_pid() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(tr -dc '0-9' <"$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "$pid"
  fi
}

node=$(hostname -s)

is_up() {
  [ -f "$marker" ] || return 1
  [ -n "$(running_pid "$dir/run/slurmctld.pid")" ] || return 1
  [ -n "$(running_pid "$dir/run/slurmd.pid")" ] || return 1
  local state
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null) || return 1
  case $state in idle* | mixed* | allocated* | completing*) return 0 ;; *) return 1 ;; esac
}

install_packages() {
  local missing=()
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get"
  echo "slurm.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
}

port_in_use() {
  # /proc/net/tcp lists listening sockets (state 0A) with hexadecimal ports.
  local hex
  hex=$(printf '%04X' "$1")
  grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

write_config() {
  local cpus mpi=none plugindir
  cpus=$(nproc)
  plugindir=$(dirname "$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep -m1 '/select_cons_tres\.so$')" 2>/dev/null || true)
  if [ -n "$plugindir" ] && [ -f "$plugindir/mpi_pmix.so" ]; then mpi=pmix; fi
  cat >"$conf" <<EOF
# Written by mpiscope's scripts/slurm.sh: a one-machine SLURM for tests.
ClusterName=mpiscope
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=$mpi
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
OverTimeLimit=0
InactiveLimit=0
MinJobAge=300
SlurmdTimeout=300
SlurmctldTimeout=120
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=1024 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
  mkdir -p "$dir/munge"
  chmod 0711 "$dir/munge"
  if [ ! -f "$dir/munge/munge.key" ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
    else
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0400 "$dir/munge/munge.key"
  fi
  [ -n "$(running_pid "$dir/run/munged.pid")" ] && return 0
  munged --force \
    --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" ||
    unavailable "munged did not start"
  local i
  for i in $(seq 50); do
    [ -S "$dir/munge/munge.socket" ] && return 0
    sleep 0.1
  done
  unavailable "munged started but made no socket"
}

up() {
  if is_up; then
    echo "slurm.sh: already up ($dir)" >&2
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  if [ -e "$dir" ] && [ ! -f "$marker" ]; then
    die "$dir exists and was not made by slurm.sh; set MPISCOPE_SLURM_DIR to another directory"
  fi
  install_packages
  # A half-started earlier instance (a daemon died): start over.
  [ -f "$marker" ] && down quiet
  for p in "$port" $((port + 1)); do
    port_in_use "$p" && die "port $p is in use (another SLURM?); set MPISCOPE_SLURM_PORT"
  done
  mkdir -p "$dir"
  touch "$marker"
  mkdir -p "$dir/state" "$dir/spool" "$dir/run" "$dir/log"
  write_config
  start_munge
  slurmctld -c >>"$dir/log/slurmctld.out" 2>&1 || unavailable "slurmctld did not start"
  slurmd >>"$dir/log/slurmd.out" 2>&1 || unavailable "slurmd did not start"
  local i d state=""
  for i in $(seq 60); do
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
    case $state in idle*) break ;; esac
    for d in slurmctld slurmd; do
      # A daemon writes its pid file once it has forked into the background.
      if [ -f "$dir/run/$d.pid" ] && [ -z "$(running_pid "$dir/run/$d.pid")" ]; then
        unavailable "$d exited after starting"
      fi
    done
    sleep 0.5
  done
  case $state in
  idle*) ;;
  *) unavailable "node $node is not idle after 30 s (state: ${state:-unknown})" ;;
  esac
  echo "slurm.sh: up: node $node, $(nproc) CPUs, MpiDefault=$(sed -n 's/^MpiDefault=//p' "$conf"), in $dir" >&2
  echo "export SLURM_CONF=$conf"
}

# Ends the process in pid file $1: SIGTERM, then SIGKILL after 10 s.
stop() {
  local pid i
  pid=$(running_pid "$1")
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  if [ ! -e "$dir" ]; then
    [ "${1:-}" = quiet ] || echo "slurm.sh: not up ($dir does not exist)" >&2
    return 0
  fi
  [ -f "$marker" ] || die "$dir was not made by slurm.sh: left as it is"
  # Jobs still running in this SLURM (a test that failed half-way) end first, so that none
  # of their processes outlives the daemons.
  if [ -n "$(running_pid "$dir/run/slurmctld.pid")" ]; then
    local jobs i
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for i in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null || true)" ] && break
        sleep 0.2
      done
    fi
  fi
  stop "$dir/run/slurmd.pid"
  stop "$dir/run/slurmctld.pid"
  stop "$dir/run/munged.pid"
  rm -rf "$dir"
  [ "${1:-}" = quiet ] || echo "slurm.sh: down" >&2
}

status() {
  if is_up; then
    echo "slurm.sh: up ($dir)"
    sinfo
    return 0
  fi
  echo "slurm.sh: not up ($dir)"
  return 1
}

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
*)
  echo "usage: scripts/slurm.sh up|down|status" >&2
  exit 2
  ;;
esac
