#!/bin/bash
# tests/device/passthrough_bench.sh: issue 16's data bench on the device
# machine in one call. Builds libfuse 3.18.3 from Debian's source package
# (carried in .deps-libfuse: the .dsc and its tarballs, as
# deploy/install-libfuse.sh downloads them; nothing can be fetched there),
# then fgds and fgds-bench against it, and runs tests/perf/posix_vs_native.sh
# with passthrough (the default) and then without it, on a directory of the
# real disk. Leaves $OUT/pt.log.
#   FGDS_PT_MODES="auto off"  the --passthrough modes of the data bench ("": none)
#   FGDS_PT_URING="keep"      the fuse module's enable_uring for each pass:
#                             "0 1" runs everything twice, /dev/fuse then
#                             FUSE over io_uring (restored at the end)
#   FGDS_PT_METADATA=N        also tests/bench/metadata.py with N files
#   FGDS_PT_ROUNDS=2          posix_vs_native.sh --rounds
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
uring_param=/sys/module/fuse/parameters/enable_uring
uring_was=$(cat "$uring_param" 2>/dev/null)
trap '[ -n "$uring_was" ] && echo "$uring_was" >"$uring_param"' EXIT
echo "kernel $(uname -r), $(nproc) CPUs; enable_uring: ${uring_was:-absent}"
DISK=$(odirect_dir /var/tmp /root /tmp)
for uring in ${FGDS_PT_URING:-keep}; do
  if [ "$uring" != keep ]; then
    echo "$uring" >"$uring_param" || { echo "cannot set enable_uring"; exit 1; }
  fi
  for mode in ${FGDS_PT_MODES-auto off}; do
    step "bench, --passthrough $mode, enable_uring $(cat "$uring_param" 2>&1), in $DISK"
    TMPDIR=$DISK FGDS=/tmp/fgds-pt/tools/fgds timeout "${FGDS_PT_TIMEOUT:-100}" \
      bash tests/perf/posix_vs_native.sh --passthrough "$mode" \
      --rounds "${FGDS_PT_ROUNDS:-2}" \
      --seq-size "${FGDS_PT_SEQ:-2G}" --rand-size "${FGDS_PT_RAND:-256M}"
  done
  if [ -n "${FGDS_PT_METADATA:-}" ]; then
    step "metadata, ${FGDS_PT_METADATA} files, enable_uring $(cat "$uring_param" 2>&1), in $DISK"
    timeout "${FGDS_PT_METADATA_TIMEOUT:-200}" python3 tests/bench/metadata.py \
      --fgds /tmp/fgds-pt/tools/fgds --files "$FGDS_PT_METADATA" --dir "$DISK"
  fi
done
step "done"
