#!/usr/bin/env bash
# Brings up a throwaway one-node CephFS (mon, mgr, 3 OSDs, MDS, a file
# system "cephfs" on replicated pools of size 2, min_size 1, so that one
# OSD can die without stopping I/O) on 127.0.0.1 in a fresh directory, from
# Debian 12's packages, as ../shared/research/ceph-lab.md measured it.
#
# Prints, on success, the lines
#   CEPH_CLUSTER_DIR=<dir>
#   CEPH_CONF=<dir>/ceph.conf
# and exits 0; stop it with stop-cluster.sh <dir>. On failure (packages
# missing: exit 77; anything else: 1) it kills what it started and keeps the
# dir for its logs. Every daemon's pid is in <dir>/pid/NAME and the command
# that started it in <dir>/cmd/NAME (cluster-ctl.sh restarts it from there).
#
# Environment: CEPH_OSDS (default 3), CEPH_MGR (default 1; 0: no manager),
# CEPH_POOL_SIZE (default 2, or 1 with one OSD), CEPH_STORE (memstore, the
# default: fastest, and an OSD killed with SIGKILL comes back empty and is
# refilled from its replicas; or bluestore on a sparse file per OSD),
# CEPH_CLUSTER_DIR (use this directory, which must not exist or be empty,
# instead of a fresh mktemp -d), CEPH_START_TIMEOUT seconds (default 60),
# TMPDIR.
set -euo pipefail

osds=${CEPH_OSDS:-3}
mgr=${CEPH_MGR:-1}
store=${CEPH_STORE:-memstore}
size=${CEPH_POOL_SIZE:-$((osds >= 2 ? 2 : 1))}
case $store in
  memstore | bluestore) ;;
  # (ceph-osd silently replaces an unknown objectstore by bluestore)
  *) echo "start-cluster: CEPH_STORE must be memstore or bluestore" >&2; exit 2 ;;
esac
if [ "$size" -gt "$osds" ] || [ "$size" -lt 1 ]; then
  echo "start-cluster: CEPH_POOL_SIZE $size needs as many OSDs (have $osds)" >&2
  exit 2
fi
timeout_s=${CEPH_START_TIMEOUT:-60}
for bin in ceph-mon ceph-osd ceph-mds ceph ceph-authtool monmaptool uuidgen; do
  if ! command -v "$bin" >/dev/null; then
    echo "start-cluster: $bin not installed (deploy/install-deps.sh)" >&2
    exit 77
  fi
done
if [ "$mgr" = 1 ] && ! command -v ceph-mgr >/dev/null; then
  echo "start-cluster: ceph-mgr not installed" >&2
  exit 77
fi

if [ -n "${CEPH_CLUSTER_DIR:-}" ]; then
  D=$CEPH_CLUSTER_DIR
  if [ -e "$D" ] && [ -n "$(ls -A "$D")" ]; then
    echo "start-cluster: $D is not empty (stop-cluster.sh $D?)" >&2
    exit 1
  fi
  mkdir -p "$D"
  D=$(cd "$D" && pwd)
else
  D=$(mktemp -d "${TMPDIR:-/tmp}/fgds-ceph.XXXXXX")
fi
mkdir -p "$D"/{pid,cmd,log,run,mon/a,mgr/x,mds/a}
start=$(date +%s.%N)
deadline=$(($(date +%s) + timeout_s))

fail() {
  echo "start-cluster: $* (logs in $D/log)" >&2
  for f in "$D"/pid/*; do
    [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
  done
  exit 1
}
trap 'fail "interrupted"' INT TERM

# A free port for the monitor.
port=
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 10000))
  if ! ss -Htln "sport = :$p" 2>/dev/null | grep . >/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || fail "no free port"

fsid=$(uuidgen)
cat >"$D/ceph.conf" <<CONF
[global]
fsid = $fsid
mon_host = v2:127.0.0.1:$port
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
public_network = 127.0.0.0/8
ms_bind_msgr1 = false
ms_bind_ipv6 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
keyring = $D/keyring
run_dir = $D/run
crash_dir = $D/crash
mon_cluster_log_file = $D/log/cluster.log
admin_socket = $D/run/\$name.\$pid.asok
osd_pool_default_size = $size
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_autoscale_mode = off
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
mon_data_avail_warn = 2
auth_allow_insecure_global_id_reclaim = false
mgr_initial_modules =
mon_mgr_mkfs_grace = 31536000
mon_osd_min_down_reporters = 1
mon_osd_reporter_subtree_level = osd
osd_heartbeat_grace = 6
osd_heartbeat_interval = 1
mds_beacon_grace = 12
mds_beacon_mon_down_grace = 10
client_mount_timeout = 30
[mon]
mon_data = $D/mon/\$id
keyring = $D/mon.keyring
log_file = $D/log/\$name.log
[mgr]
mgr_data = $D/mgr/\$id
keyring = $D/mgr/\$id/keyring
log_file = $D/log/\$name.log
[osd]
osd_data = $D/osd/\$id
keyring = $D/osd/\$id/keyring
log_file = $D/log/\$name.log
osd_objectstore = $store
memstore_device_bytes = 2147483648
bluestore_block_size = 10737418240
bluestore_fsck_on_mkfs = false
osd_memory_target = 939524096
[mds]
mds_data = $D/mds/\$id
keyring = $D/mds/\$id/keyring
log_file = $D/log/\$name.log
CONF

cli() { timeout 20 ceph --conf "$D/ceph.conf" "$@"; }
launch() {  # NAME BINARY ARGS...: runs a daemon in the foreground, in the background
  local name=$1
  shift
  printf '%q ' "$@" >"$D/cmd/$name"
  "$@" -f >>"$D/log/$name.out" 2>&1 &
  echo $! >"$D/pid/$name"
}
wait_for() {  # DESCRIPTION COMMAND...: polls until COMMAND succeeds
  local what=$1
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after ${timeout_s}s waiting for $what"
    sleep 0.2
  done
}

ceph-authtool --create-keyring "$D/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool --create-keyring "$D/keyring" --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool "$D/mon.keyring" --import-keyring "$D/keyring" >/dev/null
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$D/monmap" >/dev/null
ceph-mon --conf "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" \
  --keyring "$D/mon.keyring" >"$D/log/mon-mkfs.out" 2>&1 || fail "mon mkfs failed"
launch mon.a ceph-mon -i a --conf "$D/ceph.conf"
wait_for "the monitor" cli mon stat

if [ "$mgr" = 1 ]; then
  cli auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
    -o "$D/mgr/x/keyring" >/dev/null 2>&1 || fail "mgr key"
  launch mgr.x ceph-mgr -i x --conf "$D/ceph.conf"
fi

mkfs_pids=()
for i in $(seq 0 $((osds - 1))); do
  mkdir -p "$D/osd/$i"
  key=$(ceph-authtool --gen-print-key)
  uuid=$(uuidgen)
  echo "{\"cephx_secret\": \"$key\"}" >"$D/osd/$i/new.json"
  id=$(cli osd new "$uuid" -i "$D/osd/$i/new.json" 2>>"$D/log/cli.err") || fail "osd new"
  [ "$id" = "$i" ] || fail "osd new gave id $id, expected $i"
  printf '[osd.%s]\n\tkey = %s\n' "$i" "$key" >"$D/osd/$i/keyring"
  (ceph-osd --conf "$D/ceph.conf" -i "$i" --mkfs --key "$key" --osd-uuid "$uuid" \
    >"$D/log/osd-mkfs.$i.out" 2>&1 && touch "$D/osd/$i/mkfs.ok") &
  mkfs_pids+=($!)
done
wait "${mkfs_pids[@]}"  # not a bare wait: the mon runs in the background too
for i in $(seq 0 $((osds - 1))); do
  [ -e "$D/osd/$i/mkfs.ok" ] || fail "osd.$i mkfs failed"
  launch "osd.$i" ceph-osd -i "$i" --conf "$D/ceph.conf"
done

cli osd pool create cephfs_metadata 16 16 >/dev/null 2>>"$D/log/cli.err" || fail "pool create"
cli osd pool create cephfs_data 16 16 >/dev/null 2>>"$D/log/cli.err" || fail "pool create"
cli fs new cephfs cephfs_metadata cephfs_data >/dev/null 2>>"$D/log/cli.err" || fail "fs new"
cli auth get-or-create mds.a mon 'allow profile mds' osd 'allow rw tag cephfs *=*' \
  mds 'allow' mgr 'allow profile mds' -o "$D/mds/a/keyring" >/dev/null 2>>"$D/log/cli.err" ||
  fail "mds key"
launch mds.a ceph-mds -i a --conf "$D/ceph.conf"

osds_up() { cli osd stat 2>/dev/null | grep "$osds osds: $osds up" >/dev/null; }
mds_active() { cli mds stat 2>/dev/null | grep "up:active" >/dev/null; }
wait_for "$osds OSDs up" osds_up
wait_for "an active MDS" mds_active
trap - INT TERM

echo "start-cluster: usable after $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}") s" >&2
echo "CEPH_CLUSTER_DIR=$D"
echo "CEPH_CONF=$D/ceph.conf"
