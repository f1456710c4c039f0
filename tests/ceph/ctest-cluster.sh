#!/usr/bin/env bash
# The ctest fixture around the test cluster (tests/ceph/CMakeLists.txt):
#   ctest-cluster.sh up DIR    start a cluster in DIR (stopping and removing
#                              one a crashed run left there first)
#   ctest-cluster.sh down DIR  stop it (KEEP=1 keeps DIR and its logs)
# The suites that run over ceph find it by DIR/ceph.conf. Exit 77 (ctest:
# skipped) when the ceph packages are missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
action=${1:?usage: ctest-cluster.sh up|down DIR}
D=${2:?usage: ctest-cluster.sh up|down DIR}
case $action in
  up)
    [ -f "$D/ceph.conf" ] && "$here/stop-cluster.sh" "$D"
    rm -rf "$D"
    start=$SECONDS
    CEPH_CLUSTER_DIR=$D "$here/start-cluster.sh" || exit $?
    echo "ctest-cluster: up in $((SECONDS - start)) s"
    ;;
  down)
    [ -f "$D/ceph.conf" ] || exit 0
    "$here/stop-cluster.sh" "$D"
    ;;
  *) echo "ctest-cluster: unknown action $action" >&2; exit 2 ;;
esac
