#!/usr/bin/env bash
# A one-node SLURM cluster on localhost for tests (Debian's slurm-wlm and munge; run as root).
#
#   tests/cluster/slurm.sh install      apt-get install slurmctld slurmd slurm-client munge (Debian's
#                                       slurm-wlm without its plugin extras), unless installed
#   tests/cluster/slurm.sh start DIR    configure under DIR (keys, spool, state, logs, slurm.conf on
#                                       free loopback ports), start munged, slurmctld and slurmd, wait
#                                       until the node is idle; prints `export SLURM_CONF=DIR/slurm.conf`
#   tests/cluster/slurm.sh stop DIR     cancel the cluster's jobs, kill their processes, stop the three
#                                       daemons by the pids they wrote under DIR (SIGTERM, then SIGKILL)
#
# Everything lives under DIR (nothing in /etc, no systemd); `stop` leaves no process of the cluster
# behind and never touches a process it did not start. The controller keeps finished jobs for
# MinJobAge=3600 s, so `squeue --states=all` still knows them: there is no accounting database
# (sacct says so), and memlens.sweep reads job states from squeue then.
set -euo pipefail

die() { echo "slurm.sh: $*" >&2; exit 1; }

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
     && command -v sbatch >/dev/null; then
    return 0
  fi
  [ "$(id -u)" = 0 ] || die "installing slurm-wlm and munge needs root (apt-get); run as root or install them"
  command -v apt-get >/dev/null || die "no apt-get: install slurm-wlm and munge with this system's package manager"
  # installing must not start the packages' own services (a container without an init, or a host
  # whose services we must not touch): Debian's policy-rc.d says no to every start
  local policy=/usr/sbin/policy-rc.d added=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && added=1
  fi
  local rc=0
  # every step has a deadline (a dpkg lock held by someone else, a mirror that does not answer):
  # a failed install is a clear error, never a hang; only the daemons and clients are installed
  local apt=(timeout "${SLURM_APT_TIMEOUT:-900}" apt-get -o DPkg::Lock::Timeout=120 -o Acquire::http::Timeout=60)
  { "${apt[@]}" update -qq \
    && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge; } || rc=$?
  if [ "$added" = 1 ]; then rm -f "$policy"; fi
  [ "$rc" = 0 ] || die "apt-get install slurmctld slurmd slurm-client munge failed (status $rc; 124: timed out)"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1
  [ "$(id -u)" = 0 ] || die "the test cluster runs its daemons as root"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local host cpus mem ctl_port d_port
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
  ctl_port=$(free_port)
  d_port=$(free_port)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
  # munge: its own key (readable by the munge user only) and socket (reachable by everyone), in a
  # folder of its own that the munge user can reach (DIR may sit below a folder only root enters);
  # `stop` removes it
  local m
  m=$(mktemp -d /tmp/memlens-munge.XXXXXX)
  echo "$m" > "$dir/run/munge.dir"
  mkdir -p "$m/key" "$m/run"
  head -c 1024 /dev/urandom > "$m/key/munge.key"
  chown -R munge: "$m"
  chmod 755 "$m" "$m/run"
  chmod 700 "$m/key"
  chmod 400 "$m/key/munge.key"
  timeout 60 runuser -u munge -- munged --socket="$m/run/munge.socket" --key-file="$m/key/munge.key" \
    --pid-file="$m/run/munged.pid" --log-file="$m/munged.log" --seed-file="$m/key/munged.seed"
  cat > "$dir/slurm.conf" <<EOF
ClusterName=memlens-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$m/run/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=3600
KillWait=5
SchedulerParameters=sched_interval=1
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  export SLURM_CONF="$dir/slurm.conf"
  # the daemons fork into the background once configured; a start that does neither is a failure
  timeout 60 slurmctld || die "slurmctld did not start (status $?): $(tail -n 20 "$dir/log/slurmctld.log" 2>&1)"
  timeout 60 slurmd || die "slurmd did not start (status $?): $(tail -n 20 "$dir/log/slurmd.log" 2>&1)"
  local i state=""
  for i in $(seq 1 120); do
    state=$(timeout 10 sinfo -h -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  [ "$state" = idle ] || { tail -n 20 "$dir"/log/*.log >&2 || true; die "the node is '$state', not idle, after 60 s"; }
  echo "export SLURM_CONF=$dir/slurm.conf"
}

stop_pid() {  # stop_pid PIDFILE NAME: SIGTERM, wait up to 10 s, then SIGKILL
  local file=$1 name=$2 pid i
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  kill -0 "$pid" 2>/dev/null || return 0
  # the pid must still be the daemon we started (not a reused pid)
  grep -q "$name" "/proc/$pid/comm" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  local dir=$1
  dir=$(cd "$dir" && pwd)
  export SLURM_CONF="$dir/slurm.conf"
  if [ -s "$dir/run/slurmctld.pid" ] && kill -0 "$(cat "$dir/run/slurmctld.pid")" 2>/dev/null; then
    local jobs pids i
    jobs=$(timeout 20 squeue -h -o %A 2>/dev/null | sort -u || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      timeout 20 scancel --signal=KILL --full $jobs 2>/dev/null || true
      timeout 20 scancel $jobs 2>/dev/null || true
    fi
    for i in $(seq 1 50); do
      [ -z "$(timeout 10 squeue -h -o %A -t running,completing 2>/dev/null || true)" ] && break
      sleep 0.2
    done
    # what slurmd still runs for jobs (slurmstepd and their children): by pid
    pids=$(timeout 20 scontrol listpids 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}' || true)
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
  fi
  stop_pid "$dir/run/slurmd.pid" slurmd
  stop_pid "$dir/run/slurmctld.pid" slurmctld
  local m
  m=$(cat "$dir/run/munge.dir" 2>/dev/null || true)
  if [ -n "$m" ] && [ -d "$m" ]; then
    stop_pid "$m/run/munged.pid" munged
    case "$m" in /tmp/memlens-munge.*) rm -rf "$m" ;; esac
  fi
}

case "${1:-}" in
  install) install ;;
  start) [ -n "${2:-}" ] || die "usage: slurm.sh start DIR"; start "$2" ;;
  stop) [ -n "${2:-}" ] || die "usage: slurm.sh stop DIR"; stop "$2" ;;
  *) die "usage: slurm.sh install | start DIR | stop DIR" ;;
esac
