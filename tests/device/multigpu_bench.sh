#!/bin/bash
# tests/device/multigpu_bench.sh: aggregate GPU read throughput with one
# process per GPU (as a job's ranks run), against the same run's per-GPU
# pinned H2D (issue 18). From the repository root on a GPU machine:
#
#   bash tests/device/multigpu_bench.sh      (carry .deps on the device tool)
#
# Steps, each process pinned to its GPU with CUDA_VISIBLE_DEVICES (its
# staging then goes to that GPU's NUMA node, docs/gpu.md):
#   1. pinned H2D per GPU, each GPU alone, then all at once;
#   2. O_DIRECT reads of the disk alone (the disk's own limit);
#   3. for each mode (libfgds, usrbio-gpu): every GPU's process reads its own
#      file at once, cold (after drop_caches), then page-cached;
#   4. prints one row per GPU and the aggregate, the ratio aggregate
#      page-cached / sum of per-GPU solo H2D against the target 0.8, and
#      which limit applies: host memory bandwidth (all-at-once H2D falls
#      short of the per-GPU sum), the disk (cold aggregate near the disk's
#      O_DIRECT rate), or neither. Writes $OUT/multigpu.json.
# One GPU: every step still runs and prints the one-GPU row.
#
# Knobs: FGDS_MGPU_SIZE per GPU (default 4G), FGDS_MGPU_THREADS (8),
# FGDS_MGPU_BS (4M), FGDS_MGPU_QD (4), FGDS_MGPU_MODES ("libfgds usrbio-gpu"),
# FGDS_MGPU_BUILD (a build directory with tools/fgds and tools/fgds-bench:
# skips the build), FGDS_MGPU_GPUS (how many GPUs; default all).
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-mgpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/multigpu.log") 2>&1
ROOT=$(pwd)
SIZE=${FGDS_MGPU_SIZE:-4G}
THREADS=${FGDS_MGPU_THREADS:-8}
BS=${FGDS_MGPU_BS:-4M}
QD=${FGDS_MGPU_QD:-4}
MODES=${FGDS_MGPU_MODES:-libfgds usrbio-gpu}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

FGDS_CMAKE_DEP_ARGS=()
if [ -d .deps ]; then
  source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
else
  source tests/device/odirect_dir.sh
fi
BUILD=${FGDS_MGPU_BUILD:-}
if [ -z "$BUILD" ]; then
  BUILD=/tmp/fgds-mgpu-build
  step "build fgds and fgds-bench into $BUILD"
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFGDS_BUILD_TESTS=OFF "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 &&
    cmake --build "$BUILD" -j "$(nproc)" --target fgds fgds-bench >"$BUILD/build.log" 2>&1 ||
    { grep -E 'error' "$BUILD/build.log" | head -20; echo "build failed"; exit 1; }
fi
FGDS=$BUILD/tools/fgds
[ -x "$FGDS" ] && [ -x "$BUILD/tools/fgds-bench" ] || { echo "no $FGDS / fgds-bench"; exit 1; }

N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
N=${FGDS_MGPU_GPUS:-$N}
[ "$N" -ge 1 ] || { echo "no GPU"; exit 1; }
DISK=$(odirect_dir /var/tmp /root /tmp "$ROOT")
[ -n "$DISK" ] || { echo "no directory on a disk with O_DIRECT"; exit 1; }
DISK=$DISK/fgds-mgpu
R=$OUT/mgpu-json
rm -rf "$DISK" "$R"
mkdir -p "$DISK" "$R"
step "$N GPU(s), scratch on $DISK, $SIZE per GPU, --bs $BS --threads $THREADS --qd $QD"
nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader
"$FGDS" probe 2>&1 | grep -E '^\[.*\] (gpu|nvme|route)' | head -20
COMMON="--size $SIZE --bs $BS --threads $THREADS --qd $QD"

# bench GPU TAG ARGS...: one fgds bench process on GPU $1, its JSON in
# $R/$2-gpu$1.json, in the background; waitall waits for those (a bare
# `wait` would also wait for the log's tee, which never ends).
PIDS=()
bench() {
  local gpu=$1 tag=$2
  shift 2
  CUDA_VISIBLE_DEVICES=$gpu timeout 300 "$FGDS" bench "$@" \
    --json "$R/$tag-gpu$gpu.json" >"$R/$tag-gpu$gpu.log" 2>&1 &
  PIDS+=($!)
}
waitall() {
  [ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
  PIDS=()
}

step "pinned H2D, each GPU alone"
for i in $(seq 0 $((N - 1))); do
  bench "$i" h2d-solo --mount "$DISK" --backing "$DISK" --no-mount-check \
    $COMMON --cache warm --modes h2d
  waitall
done
step "pinned H2D, all GPUs at once"
for i in $(seq 0 $((N - 1))); do
  bench "$i" h2d-all --mount "$DISK" --backing "$DISK" --no-mount-check \
    $COMMON --cache warm --modes h2d
done
waitall
step "O_DIRECT reads of the disk alone (host memory)"
bench 0 disk --mount "$DISK" --backing "$DISK" --no-mount-check $COMMON \
  --cache cold --modes native-direct
waitall

UMNT=$DISK/mnt
UBACK=$DISK/backing
UPID=
for mode in $MODES; do
  if [ "$mode" = usrbio-gpu ] && [ -z "$UPID" ]; then
    mkdir -p "$UMNT" "$UBACK"
    "$FGDS" mount -f --data "$UBACK" "$UMNT" >"$R/daemon.log" 2>&1 &
    UPID=$!
    for _ in $(seq 100); do
      grep -q " $UMNT fuse" /proc/mounts && break
      sleep 0.1
    done
    grep -q " $UMNT fuse" /proc/mounts || { echo "usrbio-gpu: no mount"; tail "$R/daemon.log"; continue; }
  fi
  for cache in cold warm; do
    step "$mode $cache, one process per GPU at once"
    for i in $(seq 0 $((N - 1))); do
      if [ "$mode" = usrbio-gpu ]; then
        mkdir -p "$UBACK/gpu$i"
        bench "$i" "$mode-$cache" --mount "$UMNT/gpu$i" --backing "$UBACK/gpu$i" \
          $COMMON --cache "$cache" --modes "$mode"
      else
        mkdir -p "$DISK/gpu$i"
        bench "$i" "$mode-$cache" --mount "$DISK/gpu$i" --backing "$DISK/gpu$i" \
          --no-mount-check $COMMON --cache "$cache" --modes "$mode"
      fi
    done
    waitall
    rm -rf "$DISK"/gpu* "$UBACK"/gpu*
  done
done
if [ -n "$UPID" ]; then
  umount "$UMNT" 2>/dev/null || fusermount3 -u "$UMNT" 2>/dev/null || umount -l "$UMNT"
  kill "$UPID" 2>/dev/null
  wait "$UPID" 2>/dev/null
fi
for f in "$R"/*.log; do
  grep -qE 'fgds bench: |error|Error' "$f" && { echo "--- $f"; grep -E 'fgds bench: |error|Error' "$f" | head -5; }
done
rm -rf "$DISK"

python3 - "$R" "$OUT" "$N" "$MODES" <<'PY'
import json, os, sys
r, out, n, modes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()

def rate(tag, gpu, op="read"):
    try:
        with open(os.path.join(r, "%s-gpu%d.json" % (tag, gpu))) as f:
            rows = json.load(f).get("rows", [])
    except Exception:
        return None
    for row in rows:
        if row.get("op") == op:
            return row.get("gb_per_s")
    return None

def fmt(v):
    return "%8.2f" % v if v is not None else "       -"

cols = ["h2d-solo", "h2d-all"] + ["%s-%s" % (m, c) for m in modes for c in ("cold", "warm")]
table = {c: [rate(c, i) for i in range(n)] for c in cols}
disk = rate("disk", 0)
print()
print("GB/s per GPU process (1e9 B/s into GPU memory); aggregate = sum over processes run at once")
print("gpu  " + " ".join("%16s" % c for c in cols))
for i in range(n):
    print("%-4d " % i + " ".join("%16s" % fmt(table[c][i]).strip() for c in cols))
def total(c):
    vals = table[c]
    return sum(vals) if vals and all(v is not None for v in vals) else None
print("sum  " + " ".join("%16s" % fmt(total(c)).strip() for c in cols))
print("disk O_DIRECT alone: %s GB/s" % (fmt(disk).strip()))
h2d_sum, h2d_all = total("h2d-solo"), total("h2d-all")
result = {"gpus": n, "per_gpu": table, "disk_odirect": disk, "targets": []}
print()
for m in modes:
    warm, cold = total(m + "-warm"), total(m + "-cold")
    ratio = warm / h2d_sum if warm is not None and h2d_sum else None
    if h2d_all is not None and h2d_sum and h2d_all < 0.9 * h2d_sum:
        limit = "host memory bandwidth: all GPUs' H2D at once reach %.2f of their solo sum" % (h2d_all / h2d_sum)
        vs = warm / h2d_all if warm is not None and h2d_all else None
    else:
        limit, vs = "none (H2D scales over the GPUs)", None
    met = ratio is not None and (ratio >= 0.8 or (vs is not None and vs >= 0.8))
    print("%-10s page-cached aggregate %s GB/s / sum of per-GPU H2D %s = %s (target >= 0.80: %s)"
          % (m, fmt(warm).strip(), fmt(h2d_sum).strip(),
             "%.2f" % ratio if ratio is not None else "-", "met" if met else "NOT met"))
    if vs is not None:
        print("           limit: %s; against all-at-once H2D: %.2f" % (limit, vs))
    cold_limit = ("the disk (cold aggregate %.2f of O_DIRECT alone)" % (cold / disk)
                  if cold is not None and disk and cold >= 0.8 * disk else "not the disk")
    print("%-10s cold aggregate %s GB/s; limit: %s" % (m, fmt(cold).strip(), cold_limit))
    result["targets"].append({"mode": m, "warm_aggregate": warm, "h2d_sum": h2d_sum,
                              "h2d_all": h2d_all, "ratio": ratio, "met": met,
                              "limit": limit, "cold_aggregate": cold, "cold_limit": cold_limit})
with open(os.path.join(out, "multigpu.json"), "w") as f:
    json.dump(result, f, indent=1)
PY
