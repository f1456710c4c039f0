#!/usr/bin/env bash
# The rdma lab, the `rdma` stage of tests/run.sh: the agent's RDMA transport
# over soft-RoCE (rdma_rxe) in a QEMU guest, since CI's machines have no
# RDMA device and cannot load modules. The guest boots Debian 12's own
# stock kernel (linux-image-amd64: rdma_rxe is a module there), so nothing
# is compiled for the kernel; its package is downloaded once into the
# cache. The guest's root is the kmod lab's busybox initramfs
# (tests/kmod/lab/initramfs.sh) with the modules, rdma-core's user space
# (libibverbs, librdmacm, the rxe provider), `fgds` and
# fgds_rdma_lab_test (tests/rdma/rdma_lab_test.cc).
#   FGDS_LAB_CACHE       downloads and the build (default /var/cache/fgds-lab)
#   FGDS_RDMA_LAB_BUILD  a configured build tree to take the binaries from
#                        (default: the kmod lab's, $FGDS_LAB_CACHE/libfgds-build)
#   FGDS_LAB_WORK        where the work directory goes (default /tmp)
#   FGDS_RDMA_LAB_TIMEOUT  seconds the guest may run (default 420)
#   FGDS_RDMA_LAB_FILTER   gtest filter of the guest's run (default
#                        RdmaLabTest.*; e.g. fewer tests under TSan)
#   FGDS_LAB_KEEP=1      keep the work directory even when all passed
# Needs root (apt-get, mknod). Prints the guest's test results, the
# throughput line (soft-RoCE under TCG: functional numbers) and its time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/kmod/lab/lib.sh"
log() { echo "rdma-lab: $*" >&2; }

start_all=$SECONDS
lab_install qemu-system-x86 busybox-static cpio kmod iproute2 \
  libibverbs-dev librdmacm-dev ibverbs-providers
cache=$lab_cache/rdma
mkdir -p "$cache"

# 1. Debian's stock kernel: the package linux-image-amd64 points at.
t=$SECONDS
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
       sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
[ -n "$kpkg" ] || { log "cannot find the package linux-image-amd64 depends on"; exit 1; }
kver=${kpkg#linux-image-}
ktree=$cache/$kpkg
if [ ! -f "$ktree/.unpacked" ]; then
  log "downloading $kpkg"
  rm -rf "$ktree" "$cache"/linux-image-*.deb.part
  (cd "$cache" && apt-get download "$kpkg" >/dev/null 2>&1) ||
    (cd "$cache" && apt-get update -qq && apt-get download "$kpkg" >/dev/null)
  mkdir -p "$ktree"
  dpkg -x "$cache/${kpkg}"_*.deb "$ktree"
  depmod -b "$ktree" "$kver"
  rm -f "$cache/${kpkg}"_*.deb   # the unpacked tree is what is kept
  # Older kernels' trees are no longer the stock one.
  find "$cache" -maxdepth 1 -name 'linux-image-*' ! -name "$kpkg" \
    -exec rm -rf {} +
  touch "$ktree/.unpacked"
fi
log "kernel $kver ready in $((SECONDS - t)) s"

# 2. The binaries: fgds (the agent) and the test.
# By default the kmod lab's user-space build tree (the same configuration,
# RelWithDebInfo), so that the two stages build the project once.
build=${FGDS_RDMA_LAB_BUILD:-${FGDS_LAB_LIBFGDS_BUILD:-$lab_cache/libfgds-build}}
work=$(lab_mkwork rdma)
ok=0
cleanup() {
  [ -f "$work/qemu.pid" ] && kill "$(cat "$work/qemu.pid")" 2>/dev/null || true
  if [ $ok = 1 ] && [ "${FGDS_LAB_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    log "work directory kept: $work"
  fi
}
trap cleanup EXIT
t=$SECONDS
if [ -z "${FGDS_RDMA_LAB_BUILD:-}" ] && [ -f "$build/CMakeCache.txt" ] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" "$build/CMakeCache.txt"; then
  rm -rf "$build"   # configured for another checkout
fi
# A given build tree is used as configured (only the two targets are
# brought up to date); the cache's own is configured here.
configure() {
  [ -f "$build/CMakeCache.txt" ] && [ -n "${FGDS_RDMA_LAB_BUILD:-}" ] && return 0
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
}
if ! { "$repo/deploy/install-deps.sh" >/dev/null && configure &&
       cmake --build "$build" -j"$(nproc)" --target fgds fgds_rdma_lab_test
     } >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  log "build FAILED (log: $work/build.log)"
  exit 1
fi
log "fgds and fgds_rdma_lab_test built in $((SECONDS - t)) s"

# 3. The guest's root.
t=$SECONDS
root=$work/root
mkdir -p "$root/lab/bin" "$root/etc"
cp "$build/tools/fgds" "$build/tests/rdma/fgds_rdma_lab_test" "$root/lab/bin/"
# The modules, in dependency order (insmod lines for /init).
mods=(crc32_generic virtio_pci virtio_net rdma_rxe rdma_ucm fuse)
: >"$root/lab/modules.load"
while read -r cmd path _; do
  [ "$cmd" = insmod ] || continue
  rel=${path#"$ktree"}
  mkdir -p "$root$(dirname "$rel")"
  cp "$path" "$root$rel"
  grep -qx "insmod $rel" "$root/lab/modules.load" ||
    echo "insmod $rel" >>"$root/lab/modules.load"
done < <(for m in "${mods[@]}"; do
           modprobe -d "$ktree" -S "$kver" --show-depends "$m"
         done)
# libibverbs finds its providers through /etc/libibverbs.d and dlopen,
# which ldd does not see.
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$root/etc/libibverbs.d" "$root$libdir/libibverbs"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
needs=$work/needs.txt
{
  echo /usr/bin/rdma
  echo "$libdir/libibverbs/librxe-rdmav34.so"
} >"$needs"
echo "FGDS_RDMA_LAB_BENCH_MIB=${FGDS_RDMA_LAB_BENCH_MIB:-32}" >"$root/lab/lab.env"
echo "FGDS_RDMA_LAB_FILTER='${FGDS_RDMA_LAB_FILTER:-RdmaLabTest.*:RdmaMountLabTest.*:RdmaDmabufLabTest.*}'" >>"$root/lab/lab.env"
echo "export FGDS_RDMA_LAB_BENCH_MIB" >>"$root/lab/lab.env"
"$repo/tests/kmod/lab/initramfs.sh" "$root" "$work/initramfs.cpio.gz" \
  "$needs" "$here/guest-init"
log "initramfs ($(du -h "$work/initramfs.cpio.gz" | cut -f1)) made in $((SECONDS - t)) s"

# 4. Boot. All traffic stays inside QEMU (restrict=on); soft-RoCE runs on
# the guest's eth0, and agent and client talk to its own address.
t=$SECONDS
timeout -k 10 "${FGDS_RDMA_LAB_TIMEOUT:-420}" qemu-system-x86_64 \
  -machine q35 -accel tcg,thread=multi -smp 2 -m 2G \
  -nodefaults -display none -no-reboot \
  -serial "file:$work/console.log" \
  -kernel "$ktree/boot/vmlinuz-$kver" -initrd "$work/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 oops=panic quiet" \
  -netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 &
echo $! >"$work/qemu.pid"
rc=0
wait "$(cat "$work/qemu.pid")" || rc=$?
rm -f "$work/qemu.pid"
log "guest ran $((SECONDS - t)) s (qemu exit $rc)"

grep -E '^\[ *(RUN|OK|FAILED|SKIPPED|PASSED) *\]|^FGDS-RDMA-|killed mid-read|killed mid-I/O|after the kill|Failure|Expected|Which is|Value of|Actual' \
  "$work/console.log" >&2 || true
result=$(grep -a '^FGDS-RDMA-RESULT' "$work/console.log" | tail -n 1 | tr -d '\r' || true)
log "total $((SECONDS - start_all)) s"
if [ "$result" = "FGDS-RDMA-RESULT rc=0" ] &&
   ! grep -q '^\[  SKIPPED \]' "$work/console.log"; then
  ok=1
  log "passed"
else
  log "FAILED: ${result:-no result line (console: $work/console.log)}"
  exit 1
fi
