#!/usr/bin/env bash
# Kills and restarts single daemons of a cluster start-cluster.sh started,
# for the fault tests (tests/ceph/ceph_fault_test.cc):
#   cluster-ctl.sh DIR kill NAME     SIGKILL the recorded pid of NAME (mon.a,
#                                    mgr.x, osd.N, mds.a), if it still runs a
#                                    ceph daemon (pids wrap), and wait for it
#   cluster-ctl.sh DIR start NAME    start NAME again from DIR/cmd/NAME
#   cluster-ctl.sh DIR pause NAME    SIGSTOP it (a daemon that stops
#                                    answering, as behind a partition)
#   cluster-ctl.sh DIR resume NAME   SIGCONT it
#   cluster-ctl.sh DIR running NAME  exit 0 if NAME's recorded pid runs
# Only pids recorded in DIR/pid are ever signalled.
set -euo pipefail
D=${1:?usage: cluster-ctl.sh DIR kill|start|pause|resume|running NAME}
action=${2:?usage: cluster-ctl.sh DIR kill|start|pause|resume|running NAME}
name=${3:?usage: cluster-ctl.sh DIR kill|start|pause|resume|running NAME}
[ -f "$D/ceph.conf" ] && [ -f "$D/cmd/$name" ] ||
  { echo "cluster-ctl: no daemon $name in $D" >&2; exit 1; }

running() {
  local pid
  pid=$(cat "$D/pid/$name" 2>/dev/null) || return 1
  [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */ceph-* ]] &&
    ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}

case $action in
  running) running ;;
  kill)
    if running; then
      pid=$(cat "$D/pid/$name")
      kill -9 "$pid"
      for _ in $(seq 100); do running || break; sleep 0.05; done
      ! running || { echo "cluster-ctl: $name ($pid) did not die" >&2; exit 1; }
    fi
    ;;
  pause | resume)
    running || { echo "cluster-ctl: $name is not running" >&2; exit 1; }
    kill "-$([ "$action" = pause ] && echo STOP || echo CONT)" "$(cat "$D/pid/$name")"
    ;;
  start)
    running && { echo "cluster-ctl: $name is running" >&2; exit 1; }
    # exec: the recorded pid is the daemon's own, not a subshell's
    eval "exec $(cat "$D/cmd/$name") -f" >>"$D/log/$name.out" 2>&1 &
    echo $! >"$D/pid/$name"
    ;;
  *) echo "cluster-ctl: unknown action $action" >&2; exit 2 ;;
esac
