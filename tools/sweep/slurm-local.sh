#!/usr/bin/env bash
# A private single-node Slurm cluster on this machine, for testing the sweep's
# Slurm backend: its own munge key and socket, slurm.conf, spool and ports under
# one state folder, so nothing in /etc is touched and several can coexist.
#   slurm-local.sh start DIR   starts munged, slurmctld and slurmd; prints "export SLURM_CONF=..."
#   slurm-local.sh stop DIR    stops them
# Exit 3 with one line on stderr when Slurm cannot start here (missing programs,
# daemons that do not come up), so a test can skip saying why.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
state=$(mkdir -p "$2" && cd "$2" && pwd)
cant() { echo "slurm-local: $*" >&2; exit 3; }

stop() {
  for name in slurmd slurmctld munged; do
    if [ -f "$state/$name.pid" ]; then
      kill "$(cat "$state/$name.pid")" 2>/dev/null || true
    fi
  done
  for name in slurmd slurmctld munged; do
    if [ -f "$state/$name.pid" ]; then
      pid=$(cat "$state/$name.pid")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$state/$name.pid"
    fi
  done
}

# A TCP port nothing listens on (listening sockets are in /proc/net/tcp*).
free_port() {
  local port hex
  while true; do
    port=$(( 20000 + RANDOM % 40000 ))
    hex=$(printf ':%04X ' "$port")
    grep -qi "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo "$port"; return; }
  done
}

start() {
  for p in munged mungekey slurmctld slurmd sbatch squeue; do
    command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || cant "$p not installed (tools/install-deps.sh installs Slurm and munge)"
  done
  [ "$(id -u)" -eq 0 ] || cant "needs root to start slurmd (it runs jobs as their user)"
  stop
  mkdir -p "$state/spool/ctld" "$state/spool/d" "$state/log" "$state/munge"
  chmod 700 "$state/munge"
  [ -f "$state/munge/munge.key" ] || /usr/sbin/mungekey --create --keyfile="$state/munge/munge.key" >/dev/null 2>&1 ||
    cant "mungekey could not create a key"
  chmod 600 "$state/munge/munge.key"
  /usr/sbin/munged --force --socket="$state/munge/munge.sock" --key-file="$state/munge/munge.key" \
    --pid-file="$state/munged.pid" --log-file="$state/log/munged.log" --seed-file="$state/munge/seed" ||
    cant "munged did not start (see $state/log/munged.log)"
  local cpus mem host ctld_port d_port
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  host=$(hostname -s)
  ctld_port=$(free_port)
  d_port=$(free_port)
  cat > "$state/slurm.conf" <<CONF
ClusterName=atomsim-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/spool/ctld
SlurmdSpoolDir=$state/spool/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$state/slurm.conf"
  /usr/sbin/slurmctld -f "$SLURM_CONF" -i ||
    cant "slurmctld did not start (see $state/log/slurmctld.log)"
  /usr/sbin/slurmd -f "$SLURM_CONF" -N "$host" ||
    cant "slurmd did not start (see $state/log/slurmd.log)"
  for _ in $(seq 100); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.2
  done
  stop
  cant "the node did not become idle within 20 s (see $state/log/)"
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
