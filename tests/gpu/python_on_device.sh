#!/bin/bash
# tests/gpu/python_on_device.sh: the Python package's GPU check in one call
# on the device machine, from the repository root:
#
#   1. unpacks the carried Debian packages (.deps, tests/device/deps.sh)
#      into a private prefix;
#   2. builds the shared libraries (libfgds.so.0, libfgds_usrbio.so.0), the
#      `fgds` daemon and the ABI layout probe;
#   3. runs the Python unit tests (python/tests) with the device's python3:
#      their GPU cases run here instead of skipping;
#   4. mounts fgds over a directory on the real disk and runs
#      python_device_check.py: fgds.torch.load_file vs
#      safetensors.torch.load_file (every tensor equal), GdsFile, CuPy
#      arrays, usrbio GPU iovs, then the speed rows (8 GiB safetensors file
#      cold and page-cached vs raw O_DIRECT and safetensors; 4 KiB usrbio
#      IOPS from one Python thread);
#   5. prints the table last and exits 1 on any test failure or mismatch.
#
# Usage (device tool): carry .deps, run `bash tests/gpu/python_on_device.sh`.
# Knobs: FGDS_PY_SIZE (bytes of the big file, default 8 GiB),
# FGDS_PY_TENSORS (256), FGDS_PY_ROUNDS (3), FGDS_SKIP_BENCH=1.
set -u -o pipefail

OUT=${OUT:-/tmp/fgds-py-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
ROOT=$(pwd)
BUILD=/tmp/fgds-py-build
SECONDS=0
status=0
step() { echo "=== [${SECONDS}s] $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
python3 -c 'import safetensors, cupy; print("safetensors", safetensors.__version__, "cupy", cupy.__version__)'

step "dependencies"
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }

step "configure and build"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -40 "$BUILD/configure.log"; echo "configure failed"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target fgds_shared fgds_usrbio_shared \
  fgds python_abi_layout >"$BUILD/build.log" 2>&1 ||
  { grep -E 'error|Error' "$BUILD/build.log" | head -40; echo "build failed"; exit 1; }

DISK=$(odirect_dir /var/tmp /root /tmp "$ROOT")
DISK=${DISK:+$DISK/fgds-py-run}
mkdir -p "$DISK"
step "scratch on $DISK: $(df -T "$DISK" | tail -1 | awk '{print $1, $2, $5 " free"}')"

export PYTHONPATH=$ROOT/python PYTHONDONTWRITEBYTECODE=1
export FGDS_LIBRARY_DIR=$BUILD/install FGDS_BINARY=$BUILD/tools/fgds
export FGDS_ABI_LAYOUT=$BUILD/python/python_abi_layout

step "python unit tests (GPU cases included)"
# TMPDIR: the tests' mounts and files on the real disk.
(cd "$ROOT/python/tests" && TMPDIR=$DISK timeout 150 python3 -m unittest \
  test_abi test_buffers test_direct test_examples test_library \
  test_safetensors_header test_torch_files test_usrbio 2>&1 | tail -80)
rc=$?
echo "python unit tests: exit $rc"
[ "$rc" = 0 ] || status=1

step "GPU checks and speed"
MNT=$DISK/mnt BACKING=$DISK/backing
mkdir -p "$MNT" "$BACKING"
"$FGDS_BINARY" mount -f --data "$BACKING" "$MNT" >"$OUT/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do
  grep -q " $MNT fuse" /proc/mounts && break
  sleep 0.1
done
if grep -q " $MNT fuse" /proc/mounts; then
  bench_args=()
  [ "${FGDS_SKIP_BENCH:-0}" = 1 ] && bench_args+=(--skip-bench)
  timeout 360 python3 "$ROOT/tests/gpu/python_device_check.py" \
    --dir "$DISK" --mount "$MNT" --size "${FGDS_PY_SIZE:-8589934592}" \
    --tensors "${FGDS_PY_TENSORS:-256}" --rounds "${FGDS_PY_ROUNDS:-3}" \
    "${bench_args[@]}"
  rc=$?
  echo "python_device_check: exit $rc"
  [ "$rc" = 0 ] || status=1
else
  echo "the fgds mount did not come up"; tail -20 "$OUT/daemon.log"
  status=1
fi
umount "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
kill "$DAEMON" 2>/dev/null
wait "$DAEMON" 2>/dev/null
rm -rf "$DISK"
step "done: exit $status"
exit $status
