#!/bin/bash
# tests/gpu/run_on_device.sh: the whole GPU check in one call on the device
# machine (LAB.md, "Device machine (GPU)"), from the repository root:
#
#   1. unpacks the carried Debian packages (.deps/*.deb: abseil, liburing,
#      libfuse3, googletest, pkgconf) into a private prefix, never into /;
#   2. builds the GPU tests, the libfgds unit tests, fgds and fgds-bench;
#   3. runs the tests (gtest JSON per binary);
#   4. runs the GPU bench: h2d, native-direct, libfgds, bounce-baseline and
#      naive, cold and warm, then cufile on its own (it may fail);
#   5. runs `fgds probe` (text and --json) on this real GPU host;
#   6. writes $OUT/results.json (tests, rows, ratios against the targets),
#      $OUT/bench.png and $OUT/run.log, and prints the ratio table last.
#
# Usage (device tool): carry .deps, run `bash tests/gpu/run_on_device.sh`.
# Knobs: FGDS_BENCH_SIZE (default 8G), FGDS_BENCH_THREADS (8),
# FGDS_BENCH_BS (4M), FGDS_BENCH_QD (4), FGDS_SKIP_TESTS=1, FGDS_SKIP_BENCH=1,
# FGDS_ONLY_USRBIO_GPU=1 (build, test and bench only the usrbio GPU iov
# parts: usrbio_gpu_test, the example, and the native-direct + usrbio-gpu
# bench modes).
#
# usrbio needs a mounted daemon: the tests mount their own (MountedFs, as
# root, with TMPDIR on the scratch disk); the usrbio-gpu bench mode mounts
# fgds over $DISK/usrbio-backing at $DISK/usrbio-mnt and unmounts at the end.
# The daemon mounts with mount(2) as root; fusermount3 (the carried fuse3
# .deb) is on PATH for libfuse's fallback.
set -u -o pipefail

OUT=${OUT:-/tmp/fgds-gpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
ROOT=$(pwd)
DEPS=/opt/fgds-deps
BUILD=/tmp/fgds-gpu-build
RESULTS=$BUILD/results
SIZE=${FGDS_BENCH_SIZE:-8G}
THREADS=${FGDS_BENCH_THREADS:-8}
BS=${FGDS_BENCH_BS:-4M}
QD=${FGDS_BENCH_QD:-4}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader 2>&1 | head -2
echo "kernel $(uname -r), $(nproc) cpus, $(free -g | awk '/Mem:/ {print $2}') GiB"
g++ --version | head -1
cmake --version | head -1
ldconfig -p | grep -E 'libcuda\.so\.1|libcufile' | head -4
lsblk -d -o NAME,SIZE,ROTA,LOG-SEC,PHY-SEC,MIN-IO 2>/dev/null | head -5
for q in /sys/block/vd*/queue /sys/block/nvme*/queue; do
  [ -d "$q" ] && echo "$q: max_sectors_kb $(cat "$q/max_sectors_kb") nr_requests $(cat "$q/nr_requests")"
done
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"

step "dependencies into $DEPS (private prefix; unpacking into / breaks the image)"
rm -rf "$BUILD"
mkdir -p "$RESULTS"
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
ONLY_USRBIO=${FGDS_ONLY_USRBIO_GPU:-0}
echo "fusermount3: $(command -v fusermount3 || echo none); /dev/fuse: $(ls /dev/fuse 2>&1)"
echo "pkg-config: $PKG_CONFIG; liburing $("$PKG_CONFIG" --modversion liburing 2>&1)"

step "configure and build"
# deps.sh's arguments: -Werror off (the device's g++ 13 warns where
# Debian's g++ 12 does not; the warnings are in build.log, -Werror is CI's
# job) and abseil 20220623's missing <cstdint>.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -40 "$BUILD/configure.log"; echo "configure failed"; }
TARGETS="cuda_test direct_test gpu_read_test gpu_write_test gpu_concurrency_test
         gpu_lifetime_test gpu_driver_test usrbio_gpu_test usrbio_test
         usrbio_gpu_read_example fgds-bench fgds"
[ "$ONLY_USRBIO" = 1 ] && TARGETS="usrbio_gpu_test usrbio_test usrbio_gpu_read_example fgds-bench fgds"
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$(nproc)" --target $TARGETS >"$BUILD/build.log" 2>&1 ||
  { grep -E 'error|Error' "$BUILD/build.log" | head -40; echo "build failed"; }
grep -c 'warning:' "$BUILD/build.log" | sed 's/^/compiler warnings: /'
grep 'warning:' "$BUILD/build.log" | sort -u | head -20

# A directory on a real disk: tmpfs and overlayfs would hide O_DIRECT.
DISK=$(odirect_dir /var/tmp /root /tmp "$ROOT")
DISK=${DISK:+$DISK/fgds-gpu-run}
mkdir -p "$DISK"
step "scratch on $DISK: $(df -T "$DISK" | tail -1 | awk '{print $1, $2, $5 " free"}')"

step "fgds probe (exit 0: direct path available, 1: not)"
if [ -x "$BUILD/tools/fgds" ] && [ "$ONLY_USRBIO" != 1 ]; then
  "$BUILD/tools/fgds" probe | tee "$OUT/probe.txt"
  echo "fgds probe: exit ${PIPESTATUS[0]}"
  "$BUILD/tools/fgds" probe --json >"$OUT/probe.json"
fi

if [ "${FGDS_SKIP_TESTS:-0}" != 1 ]; then
  step "tests"
  export FGDS_GPU_TEST_DIR=$DISK
  TESTS="usrbio/cuda/cuda_test usrbio/direct/direct_test tests/gpu/gpu_driver_test
         tests/gpu/gpu_read_test tests/gpu/gpu_write_test
         tests/gpu/gpu_concurrency_test tests/gpu/gpu_lifetime_test
         usrbio/usrbio_test tests/gpu/usrbio_gpu_test"
  [ "$ONLY_USRBIO" = 1 ] && TESTS="usrbio/usrbio_test tests/gpu/usrbio_gpu_test"
  for t in $TESTS; do
    name=$(basename "$t")
    [ -x "$BUILD/$t" ] || { echo "$name: not built"; continue; }
    # TMPDIR: MountedFs puts its backing directory there (a real disk).
    (cd "$DISK" && TMPDIR=$DISK timeout 150 "$BUILD/$t" \
      --gtest_output="json:$RESULTS/$name.json" >"$RESULTS/$name.log" 2>&1)
    echo "$name: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$RESULTS/$name.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]|Failure|error:' "$RESULTS/$name.log" | head -20
    grep -E '^(fgds driver|  direct path|dma-buf fd)' "$RESULTS/$name.log"
  done
fi

if [ "${FGDS_SKIP_BENCH:-0}" != 1 ] && [ -x "$BUILD/tools/fgds-bench" ]; then
  # `fgds bench` as users run it: fgds execs fgds-bench, beside it.
  BENCH="$BUILD/tools/fgds bench --mount $DISK --backing $DISK --no-mount-check"
  COMMON="--size $SIZE --bs $BS --threads $THREADS --qd $QD"
  MODES="h2d native-direct libfgds bounce-baseline naive"
  [ "$ONLY_USRBIO" = 1 ] && MODES="native-direct"
  # One invocation per mode: a mode that fails costs its own rows only.
  for mode in $MODES; do
    step "bench $mode ($COMMON, cold + warm)"
    timeout 150 $BENCH $COMMON --cache both --modes "$mode" \
      --json "$RESULTS/bench-$mode.json" 2>&1 | grep -vE '^(GB/s|p50|vs base|$)'
  done
  # usrbio-gpu needs a mount: fgds over a backing directory on the disk.
  UMNT=$DISK/usrbio-mnt
  UBACK=$DISK/usrbio-backing
  mkdir -p "$UMNT" "$UBACK"
  "$BUILD/tools/fgds" mount -f --data "$UBACK" "$UMNT" >"$RESULTS/usrbio-daemon.log" 2>&1 &
  UPID=$!
  for _ in $(seq 100); do
    grep -q " $UMNT fuse" /proc/mounts && break
    sleep 0.1
  done
  if grep -q " $UMNT fuse" /proc/mounts; then
    if [ -x "$BUILD/usrbio/usrbio_gpu_read_example" ]; then
      head -c 50000000 /dev/urandom >"$UBACK/example.bin"
      step "example: usrbio_gpu_read"
      timeout 60 "$BUILD/usrbio/usrbio_gpu_read_example" "$UMNT/example.bin"
      echo "usrbio_gpu_read_example: exit $?"
      rm -f "$UBACK/example.bin"
    fi
    step "bench usrbio-gpu ($COMMON, cold + warm)"
    timeout 200 $BUILD/tools/fgds bench --mount "$UMNT" --backing "$UBACK" \
      $COMMON --cache both --modes usrbio-gpu \
      --json "$RESULTS/bench-usrbio-gpu.json" 2>&1 | grep -vE '^(GB/s|p50|vs base|$)'
    rm -rf "$UBACK"/fgds-bench-*
  else
    echo "usrbio-gpu: the mount did not come up"; tail -20 "$RESULTS/usrbio-daemon.log"
  fi
  umount "$UMNT" 2>/dev/null || fusermount3 -u "$UMNT" 2>/dev/null || umount -l "$UMNT"
  kill "$UPID" 2>/dev/null
  wait "$UPID" 2>/dev/null
  rm -rf "$UMNT" "$UBACK"
  if [ "$ONLY_USRBIO" = 1 ]; then
    : # the usrbio-only run skips the other GPU modes and the sweeps
  else
  step "bench: cufile"
  CUFILE=$(ldconfig -p | awk '/libcufile\.so\.0/ {print $NF; exit}')
  [ -n "$CUFILE" ] || CUFILE=$(find / -xdev -name 'libcufile.so.0' 2>/dev/null | head -1)
  echo "libcufile: ${CUFILE:-none found}"
  FGDS_CUFILE_LIB=$CUFILE timeout 120 $BENCH $COMMON --cache cold --modes cufile \
    --json "$RESULTS/bench-cufile.json" >"$RESULTS/cufile.log" 2>&1
  echo "cufile exit $?: $(grep -E 'fgds bench:' "$RESULTS/cufile.log" | tail -1)"
  # The CPU side's ceiling for page-cached reads: buffered reads alone.
  step "bench: native (buffered reads into host memory), 16 threads, warm"
  timeout 120 $BENCH --size $SIZE --bs $BS --threads 16 --cache warm --modes native \
    --json "$RESULTS/extra-native16.json" 2>&1 | grep -E '^native'
  # Engine sizing around the defaults (half the CPUs, 1 MiB chunks, 8 slots
  # per worker): worker count and chunk size, cold and warm.
  for cfg in "FGDS_BENCH_WORKERS=12" "FGDS_BENCH_WORKERS=16" \
             "FGDS_BENCH_CHUNK=2097152" "FGDS_BENCH_CHUNK=524288" \
             "FGDS_BENCH_WORKERS=4 FGDS_BENCH_CHUNK=4194304"; do
    [ "$SECONDS" -lt 360 ] || break
    step "bench sweep: libfgds with $cfg"
    tag=$(echo "$cfg" | tr ' =' '__')
    env $cfg timeout 150 $BENCH $COMMON --cache both --modes libfgds \
      --json "$RESULTS/sweep-$tag.json" 2>&1 | grep -E '^libfgds|fgds bench:'
  done
  fi
  rm -rf "$DISK"/fgds-bench-native.*
fi

step "summary"
python3 - "$RESULTS" "$OUT" <<'EOF'
import glob, json, os, sys
results, out = sys.argv[1], sys.argv[2]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # a missing file is a finding, not a crash
        return {"error": str(e)}

tests = {}
for path in sorted(glob.glob(os.path.join(results, "*_test.json"))):
    data = load(path)
    name = os.path.basename(path)[:-5]
    cases = []
    for suite in data.get("testsuites", []):
        for case in suite.get("testsuite", []):
            status = "skipped" if case.get("result") == "SKIPPED" else (
                "failed" if case.get("failures") else "passed")
            cases.append({"name": suite["name"] + "." + case["name"],
                          "status": status,
                          "failures": [f.get("failure", "")[:2000]
                                       for f in case.get("failures", [])]})
    tests[name] = cases

rows, configs, notes = [], {}, []
for mode in ("h2d", "native-direct", "libfgds", "bounce-baseline", "naive",
             "usrbio-gpu"):
    data = load(os.path.join(results, "bench-%s.json" % mode))
    rows += data.get("rows", [])
    configs[mode] = data.get("config") or data.get("error")
    notes += data.get("notes") or []
sweeps = {os.path.basename(p)[6:-5]: load(p).get("rows", [])
          for p in glob.glob(os.path.join(results, "sweep-*.json"))}
extra_rows = load(os.path.join(results, "extra-native16.json")).get("rows", [])
cufile_log = open(os.path.join(results, "cufile.log")).read()[-3000:] \
    if os.path.exists(os.path.join(results, "cufile.log")) else ""

def gbs(mode, op, cache=None, source=rows):
    # Reads that bypass the page cache (cache "direct") stand for cold and
    # warm alike; writes have no cache state.
    for r in source:
        if r["mode"] == mode and r["op"] == op and (
                cache is None or r["cache_wanted"] == cache or r["cache"] == "direct"):
            return r["gb_per_s"]
    return None

def ratio(a, b):
    return None if a is None or not b else a / b

m = {
    "odirect_read": gbs("native-direct", "read", "cold"),
    "odirect_write": gbs("native-direct", "write"),
    "h2d": gbs("h2d", "read", "cold"),
    "libfgds_cold": gbs("libfgds", "read", "cold"),
    "libfgds_warm": gbs("libfgds", "read", "warm"),
    "libfgds_write": gbs("libfgds", "write"),
    "bounce_cold": gbs("bounce-baseline", "read", "cold"),
    "bounce_warm": gbs("bounce-baseline", "read", "warm"),
    "naive_cold": gbs("naive", "read", "cold"),
    "naive_warm": gbs("naive", "read", "warm"),
    "usrbio_gpu_cold": gbs("usrbio-gpu", "read", "cold"),
    "usrbio_gpu_warm": gbs("usrbio-gpu", "read", "warm"),
    "usrbio_gpu_write": gbs("usrbio-gpu", "write"),
    "buffered_read_16threads_warm": gbs("native", "read", "warm", extra_rows),
}
# The issue's targets, for both GPU ways in: libfgds and usrbio GPU iovs.
targets = []
for way in ("libfgds", "usrbio_gpu"):
    targets += [
        ("%s cold read vs raw O_DIRECT read" % way,
         ratio(m[way + "_cold"], m["odirect_read"]), 0.95),
        ("%s page-cached read vs pinned H2D" % way,
         ratio(m[way + "_warm"], m["h2d"]), 0.80),
        ("%s page-cached read vs bounce-baseline" % way,
         ratio(m[way + "_warm"], m["bounce_warm"]), 1.10),
        ("%s cold write vs raw O_DIRECT write" % way,
         ratio(m[way + "_write"], m["odirect_write"]), 0.95),
    ]
summary = {
    "tests": tests,
    "bench_config": configs,
    "bench_rows": rows,
    "bench_notes": notes,
    # A cold row that says "warm" ran on a cache that could not be dropped.
    "cold_rows_really_cold": all(r["cache"] != "warm" for r in rows
                                 if r["cache_wanted"] == "cold"),
    "gb_per_s": m,
    "targets": [{"what": w, "ratio": r, "target": t,
                 "met": (r is not None and r >= t)} for w, r, t in targets],
    "sweeps": sweeps,
    "cufile_log_tail": cufile_log,
}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(summary, f, indent=1)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = ["O_DIRECT\nraw", "libfgds", "usrbio\nGPU iov", "bounce-\nbaseline",
              "naive", "h2d"]
    cold = [m["odirect_read"], m["libfgds_cold"], m["usrbio_gpu_cold"],
            m["bounce_cold"], m["naive_cold"], None]
    warm = [None, m["libfgds_warm"], m["usrbio_gpu_warm"], m["bounce_warm"],
            m["naive_warm"], m["h2d"]]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], [v or 0 for v in cold], 0.4, label="cold (disk)")
    ax.bar([i + 0.2 for i in x], [v or 0 for v in warm], 0.4, label="page cache / H2D")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("GB/s into GPU memory")
    ax.set_yscale("log")
    cfg = configs.get("libfgds") if isinstance(configs.get("libfgds"), dict) else {}
    ax.set_title("file -> GPU memory: %s bytes, %s threads, bs %s, qd %s" % (
        cfg.get("size", "?"), cfg.get("threads", "?"), cfg.get("block_size", "?"),
        cfg.get("queue_depth", "?")))
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=110)
except Exception as e:
    print("no plot:", e)

failed = [(n, c["name"]) for n, cs in tests.items() for c in cs if c["status"] == "failed"]
counts = {s: sum(1 for cs in tests.values() for c in cs if c["status"] == s)
          for s in ("passed", "failed", "skipped")}
print("tests:", counts, "failed:", failed)
def fmt(v):
    return "-" if v is None else "%.3f" % v
print("%-44s %7s %7s %7s | %s" % ("libfgds config", "cold", "warm", "write",
                                   "cold/odirect warm/h2d warm/bounce write/odirect"))
for name, srows in [("default", rows)] + sorted(sweeps.items()):
    c, w, wr = (gbs("libfgds", "read", "cold", srows), gbs("libfgds", "read", "warm", srows),
                gbs("libfgds", "write", None, srows))
    print("%-44s %7s %7s %7s | %s %s %s %s" % (
        name, fmt(c), fmt(w), fmt(wr), fmt(ratio(c, m["odirect_read"])),
        fmt(ratio(w, m["h2d"])), fmt(ratio(w, m["bounce_warm"])),
        fmt(ratio(wr, m["odirect_write"]))))
print("%-16s %-14s %-7s %8s" % ("mode", "op", "cache", "GB/s"))
for r in rows:
    print("%-16s %-14s %-7s %8.3f" % (r["mode"], r["op"], r.get("cache_wanted") or "-",
                                      r["gb_per_s"]))
print("%-12s %-8s %s" % ("GB/s", "", json.dumps({k: (round(v, 3) if v else v) for k, v in m.items()})))
print("%-50s %8s %7s %s" % ("target", "ratio", "goal", "met"))
for w, r, t in targets:
    print("%-50s %8s %7.2f %s" % (w, "-" if r is None else "%.3f" % r, t,
                                  "yes" if (r is not None and r >= t) else "NO"))
EOF
step "done"
