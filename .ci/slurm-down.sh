#!/usr/bin/env bash
# Stop the cluster started by .ci/slurm-up.sh: cancel jobs, stop each daemon by its PID file
# (waiting up to 10 s, then SIGKILL), remove the state directory. Safe to run twice.
STATE=${SLURM_DIR:-/tmp/evopolicygym-slurm}
stop() {
  local pidfile=$1 pid
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "[slurm-down] $pidfile did not stop; SIGKILL" >&2
  kill -9 "$pid" 2>/dev/null || true
}
scancel --user=root 2>/dev/null || true
stop "$STATE"/run/slurmd.pid
stop "$STATE"/run/slurmctld.pid
stop /run/munge/munged.pid
rm -rf "$STATE"
