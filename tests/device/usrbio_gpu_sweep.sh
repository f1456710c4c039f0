#!/bin/bash
# tests/device/usrbio_gpu_sweep.sh: where the usrbio-gpu page-cached read
# rate comes from, on the device machine, in one call. Reuses the build of
# tests/gpu/run_on_device.sh (/tmp/fgds-gpu-build) when the machine still
# has it, else builds `fgds` and `fgds-bench` (which `fgds bench` runs). For each daemon worker
# count it mounts fgds, then runs the usrbio-gpu read rows (warm, then
# cold) for each GPU iov chunk size, next to `h2d` and `libfgds` warm as
# references from the same minute. Leaves $OUT/sweep-*.json and
# $OUT/sweep.log.
#
# Knobs: FGDS_BENCH_SIZE (default 4G), FGDS_SWEEP_WORKERS ("8 16"),
# FGDS_SWEEP_CHUNKS ("1048576 2097152 4194304"), FGDS_SWEEP_STAGING (staging
# bytes per GPU iov, "0" = the library's default), FGDS_SWEEP_THREADS (8).
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-sweep-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/sweep.log") 2>&1
ROOT=$(pwd)
BUILD=/tmp/fgds-gpu-build
SIZE=${FGDS_BENCH_SIZE:-4G}
THREADS=${FGDS_SWEEP_THREADS:-8}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
if [ ! -x "$BUILD/tools/fgds" ] || [ ! -x "$BUILD/tools/fgds-bench" ]; then
  step "build"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${FGDS_CMAKE_DEP_ARGS[@]}" >"$OUT/configure.log" 2>&1 || exit 1
  cmake --build "$BUILD" -j "$(nproc)" --target fgds fgds-bench \
    >"$OUT/build.log" 2>&1 || { grep error "$OUT/build.log" | head; exit 1; }
fi
DISK=$(odirect_dir /var/tmp /root /tmp)
DISK=$DISK/fgds-sweep
MNT=$DISK/mnt
DATA=$DISK/data
mkdir -p "$MNT" "$DATA"
COMMON="--size $SIZE --bs 4M --threads $THREADS --qd 4"
BENCH="$BUILD/tools/fgds bench"

step "references: h2d, libfgds warm"
$BENCH --mount "$DATA" --backing "$DATA" --no-mount-check $COMMON \
  --cache warm --modes h2d,libfgds 2>&1 | grep -E '^(h2d|libfgds) +read'

for workers in ${FGDS_SWEEP_WORKERS:-8 16}; do
  "$BUILD/tools/fgds" mount -f --data "$DATA" --io-workers "$workers" "$MNT" \
    >"$OUT/daemon-$workers.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q " $MNT fuse" /proc/mounts && break; sleep 0.1; done
  for chunk in ${FGDS_SWEEP_CHUNKS:-1048576 2097152 4194304}; do
    for staging in ${FGDS_SWEEP_STAGING:-0}; do
      step "usrbio-gpu: daemon --io-workers $workers, GPU iov chunk $chunk, staging $staging"
      FGDS_BENCH_CHUNK=$chunk FGDS_BENCH_STAGING=$staging timeout 120 \
        $BENCH --mount "$MNT" --backing "$DATA" $COMMON --cache both \
        --modes usrbio-gpu --json "$OUT/sweep-w$workers-c$chunk-s$staging.json" \
        2>&1 | grep -E '^usrbio-gpu +read'
      rm -rf "$DATA"/fgds-bench-*
    done
  done
  umount "$MNT" 2>/dev/null || umount -l "$MNT"
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
done
rm -rf "$DISK"
step "done"
