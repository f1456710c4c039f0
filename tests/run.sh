#!/usr/bin/env bash
# The whole test suite, as README.md and CI run it:
#   1. a -Werror build with every unit and integration test (real FUSE mounts);
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the concurrent unit tests under ThreadSanitizer;
#   4. the fuzz targets, briefly (ctest label "fuzz", in stage 1);
#   5. formatting: every C/C++ file as clang-format wants, each by the
#      nearest .clang-format (Google style; the kernel's in kmod/ and
#      tests/kmod/);
#   6. the CephFS backend against a throwaway one-node cluster (ctest label
#      "ceph", in stage 1, timed apart);
#   7. the kernel module lab (tests/kmod/run-lab.sh, stage "kmod"): builds
#      fgds.ko against Debian 12's kernel headers, and boots guest kernels
#      under QEMU to run the module's tests (tests/kmod/README.md).
# Needs root and /dev/fuse (integration tests skip without them).
#   8. the fallback libfuse (stage "libfuse314"): fgds built against Debian
#      12's libfuse 3.14, as where deploy/install-libfuse.sh has not run
#      (passthrough and FUSE over io_uring off), and the integration suites
#      that differ between the two run against it ("libfuse314-all" runs
#      every integration test instead).
#   9. the RDMA lab (tests/rdma/run-lab.sh, stage "rdma"): the agent's
#      RDMA transport over soft-RoCE in a QEMU guest booting Debian's stock
#      kernel (tests/rdma/README.md).
# After the totals, every failed stage gets a digest of its failure lines:
# CI keeps only the tail of this output, so the reason must be there too.
# FGDS_TEST_STAGES picks stages, e.g. FGDS_TEST_STAGES="release asan".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
stages=${FGDS_TEST_STAGES:-"format release asan tsan libfuse314 kmod rdma"}
jobs=${FGDS_JOBS:-$(nproc)}

# Everything from here on is also kept in one log, for the failure digest.
run_log=$(mktemp /tmp/fgds-run.XXXXXX.log)
exec > >(tee -a "$run_log") 2>&1
tee_pid=$!
# At exit, let tee write the last lines before the script's status is seen.
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null || true' EXIT

deps_start=$SECONDS
"$repo/deploy/install-deps.sh"
echo "=== install-deps: $((SECONDS - deps_start)) s ==="

# The stages build the tree four times (release, ASan, TSan, libfuse 3.14)
# plus the labs' builds: most of a cold run. Compilations are cached
# across runs outside the repository, as the labs cache their kernels;
# CMake takes the launcher from the environment for every build directory
# it configures afresh (the labs' too). Not the checkout's path: base_dir
# and no hashed directory let every checkout share the cache.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_DIR=${CCACHE_DIR:-/var/cache/fgds-ccache}
  export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
fi

failed=()
run_stage() {
  local name=$1 dir=$2 label_args=$3
  shift 3
  echo "=== stage $name ==="
  local start=$SECONDS
  local log="$repo/$dir.build.log"
  if ! { cmake -S "$repo" -B "$repo/$dir" "$@" &&
         cmake --build "$repo/$dir" -j"$jobs"; } >"$log" 2>&1; then
    grep -E -A8 "error|Error" "$log" | head -n 60 || true
    echo "=== stage $name FAILED to build (log: $log) ==="
    failed+=("$name")
    return
  fi
  local ok=1
  rm -f "$repo/$dir/usrbio_2threads.txt"  # not last run's table
  (cd "$repo/$dir" && ctest --output-on-failure -j1 $label_args) || ok=0
  if [ "$name" = release ]; then
    # Issue 17's row for this machine (usrbio_bench_2threads, a report).
    if [ -f "$repo/$dir/usrbio_2threads.txt" ]; then
      echo "--- usrbio 4 KiB random cached reads, 2 threads, against pread ---"
      cat "$repo/$dir/usrbio_2threads.txt"
    fi
    # The CephFS backend against a throwaway one-node cluster
    # (tests/ceph/start-cluster.sh), timed on its own: it skips where the
    # ceph packages are missing.
    local ceph_start=$SECONDS
    (cd "$repo/$dir" && ctest --output-on-failure -j1 -L ceph) || ok=0
    echo "=== ceph part: $((SECONDS - ceph_start)) s ==="
  fi
  if [ $ok = 1 ]; then
    echo "=== stage $name passed in $((SECONDS - start)) s ==="
  else
    echo "=== stage $name FAILED after $((SECONDS - start)) s ==="
    failed+=("$name")
  fi
}

check_format() {
  echo "=== stage format ==="
  local start=$SECONDS
  local bad=()
  while IFS= read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done < <(cd "$repo" && git ls-files -- '*.cc' '*.h' '*.c' |
           sed "s|^|$repo/|")
  if [ ${#bad[@]} -eq 0 ]; then
    echo "=== stage format passed in $((SECONDS - start)) s ==="
  else
    printf '  not clang-formatted: %s\n' "${bad[@]}"
    echo "=== stage format FAILED (run clang-format -i on them) ==="
    failed+=(format)
  fi
}

# The suites whose behaviour depends on the libfuse version: the POSIX
# semantics and integrity suites, usrbio next to the mount, the cache modes
# (O_TMPFILE needs 3.15+), passthrough and FUSE over io_uring (which must
# say why they are off), the mount's life cycle.
run_libfuse314() {
  echo "=== stage libfuse314 ==="
  local start=$SECONDS
  local dir="$repo/build-libfuse314" log="$repo/build-libfuse314.build.log"
  local suites=(posix_semantics_test fsx_test usrbio_rw_test
                metadata_cache_test passthrough_test fuse_uring_test
                lifecycle_test)
  if ! { cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
           -DFGDS_LIBFUSE_PREFIX=/nonexistent &&
         cmake --build "$dir" -j"$jobs" --target fgds "${suites[@]}"; } \
       >"$log" 2>&1; then
    grep -E -A8 "error|Error" "$log" | head -n 60 || true
    echo "=== stage libfuse314 FAILED to build (log: $log) ==="
    failed+=(libfuse314)
    return
  fi
  local ok=1
  # It must really be the system's libfuse, not the private one. (grep
  # reads all of it: with pipefail, a grep -q that stops early can leave ldd
  # dead of SIGPIPE and the check failing, as it did once in CI.)
  if ! ldd "$dir/tools/fgds" | grep "libfuse3.so.3 => /lib/" >/dev/null; then
    echo "libfuse314: fgds is not linked with the system's libfuse:"
    ldd "$dir/tools/fgds" | grep libfuse
    ok=0
  fi
  for t in "${suites[@]}"; do
    echo "--- $t (libfuse 3.14)"
    (cd "$dir" && timeout 1200 "$dir/tests/integration/$t" --gtest_brief=1) ||
      ok=0
  done
  if [ $ok = 1 ]; then
    echo "=== stage libfuse314 passed in $((SECONDS - start)) s ==="
  else
    echo "=== stage libfuse314 FAILED after $((SECONDS - start)) s ==="
    failed+=(libfuse314)
  fi
}

run_rdma() {
  echo "=== stage rdma ==="
  local start=$SECONDS
  if "$repo/tests/rdma/run-lab.sh"; then
    echo "=== stage rdma passed in $((SECONDS - start)) s ==="
  else
    echo "=== stage rdma FAILED after $((SECONDS - start)) s ==="
    failed+=(rdma)
  fi
}

run_kmod() {
  echo "=== stage kmod ==="
  local start=$SECONDS
  if "$repo/tests/kmod/run-lab.sh"; then
    echo "=== stage kmod passed in $((SECONDS - start)) s ==="
  else
    echo "=== stage kmod FAILED after $((SECONDS - start)) s ==="
    failed+=(kmod)
  fi
}

for stage in $stages; do
  case $stage in
    format) check_format ;;
    release) run_stage release build-test "-LE ceph" -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
    asan)
      # Leak checking stays on: the daemon must not leak per request.
      ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        # (not the ceph test: libcephfs is not instrumented, and the
        # release stage runs it)
        run_stage asan build-asan "-LE ceph" -DCMAKE_BUILD_TYPE=Debug -DFGDS_SANITIZE=address ;;
    tsan)
      # TSan covers the unit tests of the concurrent parts (engine, stats,
      # pools); the mounted daemon runs under ASan above, since libfuse
      # itself is not TSan-instrumented.
      TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        run_stage tsan build-tsan "-L unit" -DCMAKE_BUILD_TYPE=Debug -DFGDS_SANITIZE=thread ;;
    kmod) run_kmod ;;
    rdma) run_rdma ;;
    libfuse314) run_libfuse314 ;;
    libfuse314-all)
      # Every integration test against libfuse 3.14 (a full build).
      run_stage libfuse314-all build-libfuse314 "-L integration" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFGDS_LIBFUSE_PREFIX=/nonexistent ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done

# failure_digest STAGE: the lines of STAGE's part of the log that say what
# failed (gtest, ctest, the labs' FAIL lines, sanitizers, timeouts).
failure_digest() {
  awk -v name="$1" '
    $0 == "=== stage " name " ===" {on = 1; next}
    on && /^=== stage / && index($0, "=== stage " name " ") != 1 {on = 0}
    on' "$run_log" |
    grep -E '\[  FAILED  \]|: Failure$|FAIL|Failed|[Tt]imed out|Sanitizer|ERROR|error:|panic|not clang-formatted' |
    grep -v -E 'tests? failed out of|FAILED TESTS?$' |
    awk '!seen[$0]++' | tail -n 25 | cut -c1-240
}

# Every stage's time again, next to the total: CI keeps only the tail.
echo "stage times:" $(grep -E -o '^=== (install-deps: [0-9]+ s|ceph part: [0-9]+ s|stage [a-z0-9-]+ (passed in|FAILED after) [0-9]+ s)' "$run_log" |
  sed -E 's/^=== (stage )?//; s/: / /; s/ passed in / /; s/ FAILED after (.*)/ \1 FAILED/; s/ s( FAILED)?$/s\1/' |
  paste -sd, -)
echo "total: $SECONDS s"
if [ ${#failed[@]} -ne 0 ]; then
  for stage in "${failed[@]}"; do
    echo "--- why $stage failed (from $run_log):"
    failure_digest "$stage" | sed 's/^/  /' || true
  done
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed: $stages"
