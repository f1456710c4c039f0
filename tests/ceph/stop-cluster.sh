#!/usr/bin/env bash
# Stops a cluster start-cluster.sh started: SIGKILLs only the pids it
# recorded (a throwaway memstore cluster has nothing to flush), checking
# each still runs a ceph daemon (pids wrap), then removes the dir.
# KEEP=1 keeps the dir (its logs).
set -uo pipefail
D=${1:?usage: stop-cluster.sh CLUSTER_DIR}
[ -f "$D/ceph.conf" ] || { echo "stop-cluster: $D is not a cluster dir" >&2; exit 1; }
for f in "$D"/pid/*; do
  [ -e "$f" ] || continue
  pid=$(cat "$f")
  if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */ceph-* ]]; then
    kill -9 "$pid" 2>/dev/null
  fi
done
for f in "$D"/pid/*; do
  [ -e "$f" ] || continue
  pid=$(cat "$f")
  for _ in $(seq 50); do
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */ceph-* ]] || break
    sleep 0.1
  done
done
[ "${KEEP:-0}" = 1 ] || rm -rf "$D"
