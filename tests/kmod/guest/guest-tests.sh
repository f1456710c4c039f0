#!/bin/sh
# File: tests/kmod/guest/guest-tests.sh
#
# The kmod lab's tests, run by the guest's /init as /lab/guest-tests.sh
# (busybox sh, root). Loads the test exporter and fgds, runs
# /lab/bin/kmod_lab_test, then the module unload tests. Prints one line per
# test: "PASS <name>", "FAIL <name>: <reason>" or "SKIP <name>: <reason>";
# other lines are for the console log only.
# /lab/lab.env (written by lab/images.sh and /init) names the devices.

# shellcheck disable=SC1091  # written at boot
. /lab/lab.env
bin=/lab/bin/kmod_lab_test
max_buffers=16
max_buffer_size=$((64 * 1024 * 1024))
failed=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=1; }
# abort NAME REASON: a failure after which nothing else can run.
abort() { echo "FAIL $1: $2"; exit 1; }

pci=$FGDS_LAB_IVSHMEM_PCI
[ -n "$pci" ] || abort setup "no ivshmem device (FGDS_LAB_IVSHMEM_PCI empty)"
[ -n "$FGDS_LAB_RAW_DEV" ] || abort setup "no drive with serial fgds-raw"
[ -n "$FGDS_LAB_EXT4_DEV" ] || abort setup "no drive with serial fgds-ext4"
# /dev/fgds_<domain>_<bus>_<dev>_<fn>, from 0000:01:00.0
node=fgds_$(echo "$pci" | tr ':.' '__')
sysdir=/sys/class/fgds/$node

# fgds's parameters: serve the ivshmem "GPU", a small registration limit
# so that ENOSPC is reachable, and a buffer size limit below the BAR so
# that E2BIG is (when this module version has that parameter).
fgds_params="extra_devices=$pci max_buffers=$max_buffers"
if grep -q 'parmtype=max_buffer_size:' /lab/fgds.ko; then
  fgds_params="$fgds_params max_buffer_size=$max_buffer_size"
fi

# wait_for TEST SECONDS: waits until TEST (a shell condition) holds.
wait_for() {
  i=0
  while ! eval "$1"; do
    i=$((i + 1))
    [ $i -gt $(($2 * 10)) ] && return 1
    sleep 0.1
  done
}

load_exporter() {  # load_exporter SUFFIX [PARAMETERS]
  # shellcheck disable=SC2086
  insmod /lab/fgds_test_exporter.ko $2 ||
    abort "insmod_exporter$1" "insmod fgds_test_exporter.ko failed"
  wait_for '[ -c /dev/fgds_test_exporter ]' 5 ||
    abort "insmod_exporter$1" "/dev/fgds_test_exporter did not appear"
  pass "insmod_exporter$1"
}

load_fgds() {  # load_fgds SUFFIX
  # shellcheck disable=SC2086
  insmod /lab/fgds.ko $fgds_params ||
    abort "insmod_fgds$1" "insmod fgds.ko $fgds_params failed"
  wait_for "[ -c /dev/$node ]" 5 ||
    abort "insmod_fgds$1" "/dev/$node did not appear"
  pass "insmod_fgds$1"
}

registrations() { cat "$sysdir/registrations" 2>/dev/null || echo gone; }

load_exporter ""
load_fgds ""

mkdir -p /mnt/ext4
mount -t ext4 "$FGDS_LAB_EXT4_DEV" /mnt/ext4 ||
  abort setup "mount $FGDS_LAB_EXT4_DEV on /mnt/ext4 failed"
ext4_file=/mnt/ext4/${FGDS_LAB_EXT4_FILE:-data.bin}

set -- --raw "$FGDS_LAB_RAW_DEV" --ext4-dir /mnt/ext4 \
  --ext4-file "$ext4_file" --tmpdir /tmp --max-buffers $max_buffers
if [ -n "$FGDS_LAB_NO_ROUTE_DEV" ] && [ -b "$FGDS_LAB_NO_ROUTE_DEV" ]; then
  set -- "$@" --noroute "$FGDS_LAB_NO_ROUTE_DEV"
else
  set -- "$@" --noroute-skip "the lab has no fgds-noroute drive"
fi
[ -n "$FGDS_LAB_RAW_SCRATCH_OFF" ] &&
  set -- "$@" --scratch-off "$FGDS_LAB_RAW_SCRATCH_OFF"
[ -n "$FGDS_LAB_SLOW_DEV" ] && set -- "$@" --slow "$FGDS_LAB_SLOW_DEV"
[ -n "$FGDS_LAB_STACK_DEV" ] &&
  set -- "$@" --stack "$FGDS_LAB_STACK_DEV" \
    --stack-fs-off "$FGDS_LAB_STACK_FS_OFF" --stack-file "$FGDS_LAB_STACK_FILE"
# Which stacks pass P2PDMA pages through, per guest kernel (from their
# sources: BLK_FEAT_PCI_P2PDMA is set by md raid0/1/10 in 7.x, by no dm
# target in either), so the stack tests pin the kernel's answer instead of
# accepting either.
case $FGDS_LAB_SERIES in
  6.12) set -- "$@" --dm-p2p 0 --md-p2p 0 ;;
  7.2) set -- "$@" --dm-p2p 0 --md-p2p 1 ;;
esac

echo "guest-tests: $bin $*"
"$bin" "$@" || failed=1

# ---- libfgds's direct path, on the real module ----
# The BAR's second-to-last 16 MiB slot: kmod_lab_test uses the ones below
# it, and the last one belongs to its hostcheck. A function, so that its
# `set --` leaves the script's arguments alone.
run_direct_test() {
  direct_test=/lab/bin/fgds_direct_lab_test
  if [ ! -x "$direct_test" ]; then
    echo "SKIP libfgds_direct_lab_test: not built (run-lab.sh builds it)"
    return
  fi
  set -- --node "/dev/$node" \
    --bar-off $((FGDS_LAB_GPUMEM_SIZE - 2 * 16 * 1024 * 1024)) \
    --raw "$FGDS_LAB_RAW_DEV" --ext4-dir /mnt/ext4 --ext4-file "$ext4_file"
  if [ -n "$FGDS_LAB_NO_ROUTE_DEV" ] && [ -b "$FGDS_LAB_NO_ROUTE_DEV" ]; then
    set -- "$@" --noroute "$FGDS_LAB_NO_ROUTE_DEV"
  fi
  echo "guest-tests: $direct_test $*"
  timeout 300 "$direct_test" "$@" ||
    fail libfgds_direct_lab_test "exit status $? (see the console log)"
  # shellcheck disable=SC2016
  wait_for '[ "$(registrations)" = 0 ]' 10 ||
    fail libfgds_released "registrations $(registrations) after libfgds closed"
}
run_direct_test

# ---- the daemon's GPU iovs on the real module ----
# An fgds mount over the ext4 drive (P2P route to the "GPU"); the client
# offers the same BAR slot as a GPU iov, and the daemon maps it.
run_usrbio_test() {
  usrbio_test=/lab/bin/fgds_usrbio_lab_test
  if [ ! -x "$usrbio_test" ] || [ ! -x /lab/bin/fgds ]; then
    echo "SKIP usrbio_gpu_lab_test: not built (run-lab.sh builds it)"
    return
  fi
  mkdir -p /mnt/fgds /run
  /lab/bin/fgds mount -f --data /mnt/ext4 /mnt/fgds >/tmp/fgds-daemon.log 2>&1 &
  daemon=$!
  # shellcheck disable=SC2016
  if ! wait_for 'grep -q " /mnt/fgds fuse" /proc/mounts' 30; then
    fail usrbio_gpu_mount "the fgds mount did not come up: $(tail -5 /tmp/fgds-daemon.log)"
    kill -9 $daemon 2>/dev/null
    return
  fi
  pass usrbio_gpu_mount
  echo "guest-tests: $usrbio_test"
  timeout 300 "$usrbio_test" --node "/dev/$node" \
    --bar-off $((FGDS_LAB_GPUMEM_SIZE - 2 * 16 * 1024 * 1024)) \
    --raw "$FGDS_LAB_RAW_DEV" --mount /mnt/fgds --backing /mnt/ext4 \
    --file "${FGDS_LAB_EXT4_FILE:-data.bin}" ||
    fail usrbio_gpu_lab_test "exit status $? (see the console log)"
  umount /mnt/fgds || umount -l /mnt/fgds
  wait_for "! kill -0 $daemon 2>/dev/null" 10 || kill -9 $daemon 2>/dev/null
  wait $daemon 2>/dev/null
  echo "---- fgds daemon log ----"
  cat /tmp/fgds-daemon.log
  # shellcheck disable=SC2016
  wait_for '[ "$(registrations)" = 0 ]' 10 ||
    fail usrbio_gpu_released "registrations $(registrations) after the daemon left"
}
run_usrbio_test

# ---- Module unload (test 10 of the brief) ----

# A process that only keeps the device open pins fgds.
( exec 3<>"/dev/$node"; exec sleep 1000 ) &
opener=$!
sleep 0.5
if rmmod fgds 2>/dev/null; then
  fail rmmod_busy_open "rmmod fgds succeeded while /dev/$node was open"
  load_fgds _after_bug
else
  pass rmmod_busy_open
fi
kill -9 $opener
wait $opener 2>/dev/null

# A process with a registration and a mapping pins fgds, and its dma-buf
# pins the exporter.
"$bin" "$@" --hold >/tmp/holder.out 2>&1 &
holder=$!
# shellcheck disable=SC2016  # wait_for evaluates it each time
if wait_for 'grep -q READY /tmp/holder.out || ! kill -0 $holder 2>/dev/null' 60 &&
   grep -q READY /tmp/holder.out; then
  if rmmod fgds 2>/dev/null; then
    fail rmmod_busy_registered "rmmod fgds succeeded under a live registration"
    load_fgds _after_bug
  else
    pass rmmod_busy_registered
  fi
  if rmmod fgds_test_exporter 2>/dev/null; then
    fail rmmod_exporter_busy "rmmod fgds_test_exporter succeeded while fgds holds its dma-buf"
    load_exporter _after_bug
  else
    pass rmmod_exporter_busy
  fi
else
  fail rmmod_busy_registered "the holder did not get ready: $(cat /tmp/holder.out)"
fi
kill -9 $holder 2>/dev/null
wait $holder 2>/dev/null
# shellcheck disable=SC2016
wait_for '[ "$(registrations)" = 0 ]' 10 ||
  fail holder_released "registrations $(registrations) 10 s after SIGKILL of the holder"

umount /mnt/ext4

# Idle: both unload, the node and the class device go away.
if rmmod fgds; then
  pass rmmod_idle
  if wait_for "[ ! -e /dev/$node ] && [ ! -e $sysdir ]" 5; then
    pass rmmod_node_gone
  else
    fail rmmod_node_gone "/dev/$node or $sysdir still there after rmmod"
  fi
else
  fail rmmod_idle "rmmod fgds failed with nothing open (refcnt $(cat /sys/module/fgds/refcnt))"
fi
if rmmod fgds_test_exporter; then
  pass rmmod_exporter
else
  fail rmmod_exporter "rmmod fgds_test_exporter failed (refcnt $(cat /sys/module/fgds_test_exporter/refcnt))"
fi

# No configuration lifts the 1 TiB bound on a registration (a token's
# range): a larger max_buffer_size fails the load.
# shellcheck disable=SC2086
if insmod /lab/fgds.ko $fgds_params max_buffer_size=$((1099511627776 + 4096)) 2>/dev/null; then
  fail insmod_max_buffer_size_refused "insmod with max_buffer_size 1 TiB + 4 KiB succeeded"
  rmmod fgds
else
  pass insmod_max_buffer_size_refused
fi

# fgds alone loads and unloads again.
# shellcheck disable=SC2086
if insmod /lab/fgds.ko $fgds_params && wait_for "[ -c /dev/$node ]" 5 &&
   rmmod fgds; then
  pass reinsmod_fgds_alone
else
  fail reinsmod_fgds_alone "insmod, node or rmmod failed"
  rmmod fgds 2>/dev/null
fi

# Both again, with a short run: nothing stale survived the unload. The
# exporter is dynamic this time (pin/unpin ops, like amdgpu; the first run
# had it static, like NVIDIA's), which changes how the dma-buf core maps
# and invalidates.
load_exporter _reload dynamic=1
load_fgds _reload
mount -t ext4 "$FGDS_LAB_EXT4_DEV" /mnt/ext4 || fail remount "mount ext4 failed"
"$bin" "$@" --name-suffix _dynamic sysfs_attrs query reg_mmap_unreg \
  reg_two_tokens reject_outside_bar reject_revoked_dmabuf io_raw_read \
  io_reverse io_uring_read unreg_inflight revoke_inflight revoke_mapped \
  kill_holder || failed=1
umount /mnt/ext4
if rmmod fgds && rmmod fgds_test_exporter; then
  pass rmmod_final
else
  fail rmmod_final "rmmod after the reload failed"
fi

exit $failed
