#!/usr/bin/env bash
# Start a disposable one-node SLURM cluster on this machine (root, no systemd) for the SLURM
# pipeline test. No accounting daemon: sacct does not work, so Snakemake's SLURM plugin must use
# `slurm-status-command: squeue`, and jobs stay visible to squeue for MinJobAge seconds.
# Stop it with .ci/slurm-down.sh (same SLURM_DIR). Debian/Ubuntu only (apt packages).
#   SLURM_DIR=/tmp/evopolicygym-slurm bash .ci/slurm-up.sh
set -euo pipefail
STATE=${SLURM_DIR:-/tmp/evopolicygym-slurm}
START=$EPOCHREALTIME
step() { printf '[slurm-up] %-22s %6.2fs\n' "$1" "$(awk -v a="$START" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')"; }

[ "$(id -u)" = 0 ] || { echo "slurm-up: must run as root (starts munged, slurmctld, slurmd)" >&2; exit 2; }

# Packages; their post-install scripts cannot start services without systemd, which we want.
packages="munge slurmctld slurmd slurm-client"
if ! dpkg -s $packages >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi
step "packages"

mkdir -p "$STATE"/{state,spool,run,log}
chown slurm:slurm "$STATE"/state
chmod 1777 "$STATE"/log

# munge: one shared key, daemon running as the munge user.
if [ ! -s /etc/munge/munge.key ]; then
  /usr/sbin/mungekey --create --force 2>/dev/null \
    || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 600 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 755 /run/munge
runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
munge -n | unmunge >/dev/null
step "munged"

# The node must be named like `hostname -s` and claim no more memory than slurmd detects, or it
# registers as INVALID; cgroup plugins are off (no systemd-managed cgroup tree here).
node=$(hostname -s)
memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
[ "$memory" -gt 2048 ] && memory=$((memory - 1024))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=evopolicygym-ci
SlurmctldHost=${node}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
KillWait=5
SlurmdTimeout=30
NodeName=${node} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=${memory} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

/usr/sbin/slurmctld -i   # -i: ignore saved state from an earlier cluster
/usr/sbin/slurmd
for _ in $(seq 150); do sinfo -h -o '%T' 2>/dev/null | grep -q '^idle' && break; sleep 0.2; done
if ! sinfo -h -o '%T' | grep -q '^idle'; then
  echo "slurm-up: node did not become idle" >&2
  sinfo >&2 || true
  tail -n 20 "$STATE"/log/*.log >&2 || true
  exit 1
fi
step "controller + node idle"
srun -t 1 true
step "srun works"
