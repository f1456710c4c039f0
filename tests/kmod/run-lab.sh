#!/usr/bin/env bash
# The kmod lab, the `kmod` stage of tests/run.sh: compiles the kernel module
# against Debian 12's kernel headers (compile-check.sh), then, for every
# guest kernel series, builds that kernel once (build-kernel.sh, cached),
# builds fgds.ko, the test exporter and the guest tests against it, boots
# it under QEMU (TCG) with emulated NVMe drives and an ivshmem "GPU" behind
# one PCIe switch, and checks the guest's results. README.md in this
# directory says more.
#   FGDS_LAB_KERNELS   kernel series to boot (default "6.12 7.2")
#   FGDS_LAB_FLAVOUR   a guest kernel flavour (build-kernel.sh): "lockdep"
#                      adds lock-order proofs (docs/kmod.md, "Locking")
#   FGDS_LAB_CACHE     kernels, header packages (default /var/cache/fgds-lab)
#   FGDS_LAB_WORK      where the private work directory goes (default /tmp)
#   FGDS_LAB_LIBFGDS_BUILD  the user-space build (default
#                      $FGDS_LAB_CACHE/libfgds-build, shared by every run)
#   FGDS_LAB_BOOT_TIMEOUT  seconds a guest may run (default 600)
#   FGDS_LAB_KEEP=1    keep the work directory even when all passed
# Needs root (apt-get, mknod).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lab/lib.sh"

lab_install build-essential flex bison bc libelf-dev libssl-dev dwarves \
  cpio xz-utils kmod debian-archive-keyring \
  qemu-system-x86 busybox-static e2fsprogs openssl liburing-dev

start_all=$SECONDS
work=$(lab_mkwork lab)
failed=()
child=
# On an interrupt, end the running series and its QEMU; keep the work
# directory after a failure, for the logs.
cleanup() {
  [ -z "$child" ] || kill "$child" 2>/dev/null || true
  local pidfile
  for pidfile in "$work"/*/qemu.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  if [ ${#failed[@]} -eq 0 ] && [ "${FGDS_LAB_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    lab_log "work directory kept: $work"
  fi
}
trap cleanup EXIT
trap 'failed+=(interrupted); exit 143' TERM INT HUP

# run_bg CMD...: runs CMD in the background and waits for it, so that an
# interrupt reaches the trap above at once.
run_bg() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=
  return $rc
}

t=$SECONDS
if run_bg "$here/compile-check.sh"; then
  lab_log "compile-check passed in $((SECONDS - t)) s"
else
  failed+=(compile-check)
fi

# libfgds's direct path and the daemon's GPU iovs run in the guest too
# (libfgds/direct_lab_test.cc, libfgds/usrbio_lab_test.cc and the `fgds`
# daemon, against the real fgds.ko and the test exporter). One build for
# all series (it is user space), kept in the cache so that reruns only
# relink.
repo=$(cd "$here/../.." && pwd)
"$repo/deploy/install-deps.sh" >/dev/null
libfgds_build=${FGDS_LAB_LIBFGDS_BUILD:-${FGDS_LAB_CACHE:-/var/cache/fgds-lab}/libfgds-build}
# CMake refuses a build tree configured from another source directory, and
# every CI run checks out to a fresh path: start over when the source moved.
if [ -f "$libfgds_build/CMakeCache.txt" ] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" \
     "$libfgds_build/CMakeCache.txt"; then
  lab_log "libfgds build cache was configured for another checkout; rebuilding"
  rm -rf "$libfgds_build"
fi
t=$SECONDS
if { cmake -S "$repo" -B "$libfgds_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
     cmake --build "$libfgds_build" -j"$(nproc)" --target fgds_direct_lab_test \
       fgds_usrbio_lab_test fgds
   } >"$work/libfgds.build.log" 2>&1; then
  export FGDS_LAB_DIRECT_TEST=$libfgds_build/tests/kmod/libfgds/fgds_direct_lab_test
  export FGDS_LAB_USRBIO_TEST=$libfgds_build/tests/kmod/libfgds/fgds_usrbio_lab_test
  export FGDS_LAB_DAEMON=$libfgds_build/tools/fgds
  lab_log "libfgds and usrbio lab tests built in $((SECONDS - t)) s"
else
  tail -n 40 "$work/libfgds.build.log" >&2
  lab_log "libfgds lab test FAILED to build (log: $work/libfgds.build.log)"
  failed+=(libfgds-build)
fi

for series in ${FGDS_LAB_KERNELS:-6.12 7.2}; do
  t=$SECONDS
  if ! kdir=$("$here/build-kernel.sh" "$series" ${FGDS_LAB_FLAVOUR:-}); then
    failed+=("kernel-$series")
    continue
  fi
  lab_log "kernel $series ready in $((SECONDS - t)) s: $kdir"
  mkdir -p "$work/$series"
  t=$SECONDS
  if run_bg "$here/lab/run-series.sh" "$series" "$kdir" "$work/$series"; then
    lab_log "lab $series passed in $((SECONDS - t)) s"
  else
    failed+=("lab-$series")
  fi
done

lab_log "total $((SECONDS - start_all)) s"
if [ ${#failed[@]} -ne 0 ]; then
  lab_log "FAILED: ${failed[*]}"
  exit 1
fi
lab_log "all passed"
