#!/bin/bash
# tests/device/multigpu_on_device.sh: the multi-GPU check (issue 18) in one
# device-tool call, from the repository root, carrying .deps:
#   1. builds the multi-GPU test, the GPU and CPU tests it touches, fgds
#      and fgds-bench;
#   2. runs them (the multi-GPU parts skip, with the reason, on one GPU);
#   3. runs tests/device/multigpu_bench.sh on the same build.
# Knobs: FGDS_MGPU_SIZE (bench bytes per GPU, default here 2G),
# FGDS_MGPU_SKIP_BENCH=1, FGDS_MGPU_MODES (default libfgds usrbio-gpu),
# FGDS_MGPU_TEST_TIMEOUT (seconds per test binary, 120).
# Output: $OUT/mgpu-tests/*.json and *.log, $OUT/multigpu.json, the log.
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-mgpu-out}
mkdir -p "$OUT/mgpu-tests"
ROOT=$(pwd)
BUILD=/tmp/fgds-mgpu-build
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
step "machine: $(nvidia-smi -L 2>&1 | wc -l) GPU(s), $(nproc) cpus"
nvidia-smi -L
for d in /sys/bus/pci/devices/*; do
  [ "$(cat "$d/vendor")" = 0x10de ] && case $(cat "$d/class") in 0x03*)
    echo "$(basename "$d"): numa_node $(cat "$d/numa_node")";; esac
done
step "build"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -30 "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target usrbio_gpu_multi_test \
  usrbio_gpu_test gpu_driver_test cuda_test direct_test gpu_select_test \
  fgds fgds-bench >"$BUILD/build.log" 2>&1 ||
  { grep -E 'error' "$BUILD/build.log" | head -30; echo "build failed"; }
DISK=$(odirect_dir /var/tmp /root /tmp "$ROOT")/fgds-mgpu-tests
mkdir -p "$DISK"
step "tests (scratch $DISK)"
for t in tests/gpu/usrbio_gpu_multi_test common/gpu/gpu_select_test \
         usrbio/cuda/cuda_test usrbio/direct/direct_test \
         tests/gpu/gpu_driver_test tests/gpu/usrbio_gpu_test; do
  name=$(basename "$t")
  [ -x "$BUILD/$t" ] || { echo "$name: not built"; continue; }
  (cd "$DISK" && FGDS_GPU_TEST_DIR=$DISK TMPDIR=$DISK timeout "${FGDS_MGPU_TEST_TIMEOUT:-120}" "$BUILD/$t" \
    --gtest_output="json:$OUT/mgpu-tests/$name.json" >"$OUT/mgpu-tests/$name.log" 2>&1)
  echo "$name: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/mgpu-tests/$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Failure|Skipped|SKIPPED \]|checked [0-9]' "$OUT/mgpu-tests/$name.log" | head -20
  grep -B2 -A8 'Failure' "$OUT/mgpu-tests/$name.log" | head -60
done
rm -rf "$DISK"
if [ "${FGDS_MGPU_SKIP_BENCH:-0}" != 1 ]; then
  step "bench"
  FGDS_MGPU_BUILD=$BUILD FGDS_MGPU_SIZE=${FGDS_MGPU_SIZE:-2G} \
    bash tests/device/multigpu_bench.sh
fi
step "done"
