#!/bin/bash
# tests/device/usrbio_bench.sh: issue 3's numbers on the device machine
# (16 cores, virtio disk) in one call: builds `fgds`, mounts it over a
# directory of the real disk, and runs `fgds bench` for usrbio against
# posix and native, 4 KiB random page-cached reads and 1 MiB sequential
# reads (cold and warm). Leaves $OUT/usrbio-*.json and $OUT/usrbio.log.
#
# Usage (device tool): carry .deps, run `bash tests/device/usrbio_bench.sh`.
# Knobs: FGDS_BENCH_SIZE (default 4G), FGDS_IO_WORKERS (daemon default),
# FGDS_SKIP_SEQ=1 (4 KiB random only).
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-usrbio-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/usrbio.log") 2>&1
ROOT=$(pwd)
BUILD=/tmp/fgds-usrbio-build
SIZE=${FGDS_BENCH_SIZE:-4G}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

step "machine: $(nproc) cpus, kernel $(uname -r)"
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
step "build fgds"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFGDS_BUILD_TESTS=OFF \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$OUT/configure.log" 2>&1 ||
  { tail -30 "$OUT/configure.log"; exit 1; }
# `fgds bench` execs fgds-bench, built beside fgds.
cmake --build "$BUILD" -j "$(nproc)" --target fgds fgds-bench >"$OUT/build.log" 2>&1 ||
  { grep -E 'error' "$OUT/build.log" | head -30; exit 1; }
FGDS=$BUILD/tools/fgds

# A directory on the real disk (tmpfs or overlayfs would hide O_DIRECT).
DISK=$(odirect_dir /var/tmp /root /tmp)
[ -n "$DISK" ] || { echo "no directory takes O_DIRECT"; exit 1; }
DISK=$DISK/fgds-usrbio
mkdir -p "$DISK/data" "$DISK/mnt"
step "mount $DISK/mnt over $DISK/data"
WORKERS=()
[ -n "${FGDS_IO_WORKERS:-}" ] && WORKERS=(--io-workers "$FGDS_IO_WORKERS")
"$FGDS" mount --data "$DISK/data" "${WORKERS[@]}" "$DISK/mnt" || exit 1
trap '"$FGDS" umount "$DISK/mnt"; rm -rf "$DISK"' EXIT

bench() {
  local name=$1; shift
  step "bench $name: $*"
  timeout 280 "$FGDS" bench --mount "$DISK/mnt" --backing "$DISK/data" \
    --json "$OUT/usrbio-$name.json" "$@" 2>&1 | grep -vE '^(GB/s|p50|vs base|$)'
}
bench rand4k-t1 --size 512M --bs 4K --pattern rand --cache warm --qd 32 --threads 1 \
  --modes posix,native,usrbio
bench rand4k-t4 --size 1G --bs 4K --pattern rand --cache warm --qd 32 --threads 4 \
  --modes posix,native,usrbio
# The same single client with deeper queues, and with spinning (the ior's
# spin_us: the daemon's ring thread and fgds_ior_wait poll before sleeping).
bench rand4k-t1-qd128 --size 512M --bs 4K --pattern rand --cache warm --qd 128 \
  --threads 1 --modes posix,usrbio
FGDS_BENCH_SPIN_US=50 bench rand4k-t1-spin --size 512M --bs 4K --pattern rand \
  --cache warm --qd 32 --threads 1 --modes posix,usrbio
FGDS_BENCH_SPIN_US=50 bench rand4k-t1-qd128-spin --size 512M --bs 4K --pattern rand \
  --cache warm --qd 128 --threads 1 --modes posix,usrbio
[ "${FGDS_SKIP_SEQ:-0}" = 1 ] ||
  bench seq1m --size "$SIZE" --bs 1M --pattern seq --cache both --qd 8 --threads 1 \
  --modes native,posix,usrbio,native-direct,usrbio-direct
step "done"
