#!/usr/bin/env bash
# A throwaway single-node Slurm with fake GPUs, for the fleet's tests and CI (root only).
#
#   scripts/slurm_local.sh install            apt-get the Debian packages (slurm-wlm, munge)
#   scripts/slurm_local.sh start DIR [GPUS]   start munged, slurmctld and slurmd under DIR
#   scripts/slurm_local.sh stop DIR           stop them (by the pids they wrote under DIR)
#
# Everything lives under DIR: configuration, state, logs, the munge key and socket. Clients
# find the cluster through SLURM_CONF=DIR/slurm.conf, which `start` prints as its last line.
# The GPUs are fake: gres.conf names character devices DIR/dev/gpuN (made with /dev/null's
# device numbers; Slurm accepts nothing but a device file) as their device files, so Slurm
# hands each task its own GPU index in CUDA_VISIBLE_DEVICES and SLURM_JOB_GPUS, as on a GPU
# node, while nothing can be computed on them.
set -euo pipefail

die() { echo "slurm_local.sh: $*" >&2; exit 2; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install() {
    [ "$(id -u)" = 0 ] || die "installing Slurm needs root"
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return 0
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

write_config() {
    local dir=$1 gpus=$2 host cpus
    host=$(hostname -s)
    cpus=$(nproc --all)
    mkdir -p "$dir"/{state,spool,log,dev,munge}
    for ((i = 0; i < gpus; i++)); do
        [ -c "$dir/dev/gpu$i" ] || mknod "$dir/dev/gpu$i" c 1 3
    done
    cat >"$dir/slurm.conf" <<CONF
ClusterName=linbench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host CPUs=$cpus Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    echo "NodeName=$host Name=gpu File=$dir/dev/gpu[0-$((gpus - 1))]" >"$dir/gres.conf"
}

start() {
    local dir gpus=${2:-4}
    [ "$(id -u)" = 0 ] || die "starting slurmd needs root"
    command -v slurmctld >/dev/null || die "Slurm is not installed (scripts/slurm_local.sh install)"
    mkdir -p "$1"
    dir=$(cd "$1" && pwd)
    write_config "$dir" "$gpus"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 700 "$dir/munge" && chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    for _ in $(seq 1 60); do
        if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)'; then
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.5
    done
    stop "$dir"
    die "the node did not come up within 30 s; see $dir/log/"
}

stop() {
    # Slurm's two daemons are asked to stop together and waited for (each saves its state, a
    # second or more), then munge, which they may still use on their way out.
    local dir=$1
    stop_daemons "$dir/slurmd.pid" "$dir/slurmctld.pid"
    stop_daemons "$dir/munge/munged.pid"
}

stop_daemons() {  # SIGTERM to each pid file's process, then wait for all (SIGKILL after 10 s)
    local pidfile pid pids=()
    for pidfile in "$@"; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        pids+=("$pid")
        rm -f "$pidfile"
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true  # still there after 10 s
    done
}

case "${1:-}" in
    install) install ;;
    start) [ $# -ge 2 ] || die "usage: start DIR [GPUS]"; start "$2" "${3:-4}" ;;
    stop) [ $# -ge 2 ] || die "usage: stop DIR"; stop "$2" ;;
    *) die "usage: $0 install | start DIR [GPUS] | stop DIR" ;;
esac
