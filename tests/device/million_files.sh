#!/bin/bash
# tests/device/million_files.sh: the million-file namespace bench of issue
# 12 (not in CI, which runs 200,000): builds `fgds` and
# tests/integration/namespace_scale_test, then creates, lists and stats, and
# removes FGDS_SCALE_FILES files (default 1,000,000) in one directory of a
# mount over a private tmpfs, with the daemon held to 1,024 descriptors.
# Prints each phase's time; leaves $OUT/million_files.log.
#
# Usage (device tool): carry .deps, run `bash tests/device/million_files.sh`;
# locally, as root: FGDS_BUILD=build-test bash tests/device/million_files.sh
# (reuses that build directory and skips the carried packages).
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-million-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/million_files.log") 2>&1
ROOT=$(pwd)
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

step "machine: $(nproc) cpus, kernel $(uname -r)"
if [ -n "${FGDS_BUILD:-}" ]; then
  BUILD=$FGDS_BUILD
  ARGS=()
else
  source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
  BUILD=/tmp/fgds-million-build
  ARGS=("${FGDS_CMAKE_DEP_ARGS[@]}")
fi
step "build fgds and namespace_scale_test in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ARGS[@]}" \
  >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target fgds namespace_scale_test \
  >"$OUT/build.log" 2>&1 || { grep -E 'error' "$OUT/build.log" | head -30; exit 1; }
step "run with ${FGDS_SCALE_FILES:=1000000} files"
export FGDS_SCALE_FILES
"$BUILD/tests/integration/namespace_scale_test" \
  --gtest_filter='*ManyFilesUnderALowDescriptorLimit*'
rc=$?
step "done (rc $rc)"
exit $rc
