#!/bin/bash
# tests/device/passthrough_bench.sh: issue 16's data bench on the device
# machine in one call. Builds libfuse 3.18.3 from Debian's source package
# (carried in .deps-libfuse: the .dsc and its tarballs, as
# deploy/install-libfuse.sh downloads them; nothing can be fetched there),
# then fgds and fgds-bench against it, and runs tests/perf/posix_vs_native.sh
# with passthrough (the default) and then without it, on a directory of the
# real disk. Leaves $OUT/pt.log.
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-pt-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/pt.log") 2>&1
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
step "libfuse"
FGDS_DEPS_CACHE=$PWD/.deps-libfuse bash deploy/install-libfuse.sh || exit 1
# deps.sh's pkg-config prefixes every path with $DEPS (its sysroot).
mkdir -p "$DEPS/opt/fgds"
ln -sfn /opt/fgds/libfuse-3.18.3 "$DEPS/opt/fgds/libfuse-3.18.3"
step "build"
cmake -S . -B /tmp/fgds-pt -DCMAKE_BUILD_TYPE=Release -DFGDS_BUILD_TESTS=OFF \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$OUT/configure.log" 2>&1 ||
  { tail -n 30 "$OUT/configure.log"; exit 1; }
grep -E "libfuse" "$OUT/configure.log"
cmake --build /tmp/fgds-pt -j "$(nproc)" --target fgds fgds-bench \
  >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -20; exit 1; }
echo "kernel $(uname -r), $(nproc) CPUs; enable_uring: $(cat /sys/module/fuse/parameters/enable_uring 2>&1)"
DISK=$(odirect_dir /var/tmp /root /tmp)
for mode in auto off; do
  step "bench, --passthrough $mode, in $DISK"
  TMPDIR=$DISK FGDS=/tmp/fgds-pt/tools/fgds timeout "${FGDS_PT_TIMEOUT:-100}" \
    bash tests/perf/posix_vs_native.sh --passthrough "$mode" \
    --seq-size "${FGDS_PT_SEQ:-2G}" --rand-size "${FGDS_PT_RAND:-256M}"
done
step "done"
