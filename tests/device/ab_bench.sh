#!/bin/bash
# tests/device/ab_bench.sh: "no slower" checks for a change to the data
# path. Runs the same `fgds bench` cases with two builds of fgds, before
# and after, interleaved (before, after, before, after) on one machine in
# one script, because these machines are too noisy for figures from two
# runs to be compared. Each build serves its own mount and runs its own
# bench (so in-process paths such as libfgds are compared too).
#
#   FGDS_AB_BEFORE_BIN / FGDS_AB_AFTER_BIN   prebuilt fgds binaries; or
#   FGDS_AB_BEFORE_SRC                       a source tree to build "before"
#                                            from (the repo is "after")
#   FGDS_AB_SIZE (default 1G), FGDS_AB_ROUNDS (2), FGDS_AB_GPU=1 adds the
#   GPU cases (libfgds, usrbio-gpu: 8 threads, 4 MiB blocks, qd 4),
#   FGDS_AB_CPU=0 leaves out the CPU ones (POSIX and usrbio into host
#   memory); FGDS_AB_GPU_MODES and FGDS_AB_GPU_CACHE narrow the GPU case.
#
# On the device machine: carry .deps and the before tree, e.g.
#   git archive BASE | tar -x -C .ab-before   (ignored by .git/info/exclude)
#   FGDS_AB_BEFORE_SRC=.ab-before FGDS_AB_GPU=1 bash tests/device/ab_bench.sh
# Leaves $OUT/ab-*.json, $OUT/ab.log and prints the table last (GB/s per
# round, the ratio of means, and the median p99 latency of each side).
set -u -o pipefail
OUT=${OUT:-/tmp/fgds-ab-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/ab.log") 2>&1
ROOT=$(pwd)
SIZE=${FGDS_AB_SIZE:-1G}
ROUNDS=${FGDS_AB_ROUNDS:-2}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

build() {  # build SRC DIR: the fgds binaries of SRC into DIR
  local src=$1 dir=$2
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFGDS_BUILD_TESTS=OFF "${FGDS_CMAKE_DEP_ARGS[@]}" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j "$(nproc)" --target fgds >"$dir.build.log" 2>&1 || {
      grep -E 'error' "$dir.build.log" | head -20
      return 1
    }
  # A tree whose bench is its own executable builds that too.
  cmake --build "$dir" -j "$(nproc)" --target fgds-bench >>"$dir.build.log" 2>&1 || true
}

FGDS_CMAKE_DEP_ARGS=()
if [ -d .deps ]; then
  source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }
fi
BEFORE=${FGDS_AB_BEFORE_BIN:-}
AFTER=${FGDS_AB_AFTER_BIN:-}
if [ -z "$BEFORE" ]; then
  step "build before from ${FGDS_AB_BEFORE_SRC:?set FGDS_AB_BEFORE_SRC or FGDS_AB_BEFORE_BIN}"
  build "$(cd "$FGDS_AB_BEFORE_SRC" && pwd)" /tmp/fgds-ab-before || exit 1
  BEFORE=/tmp/fgds-ab-before/tools/fgds
fi
if [ -z "$AFTER" ]; then
  step "build after from $ROOT"
  build "$ROOT" /tmp/fgds-ab-after || exit 1
  AFTER=/tmp/fgds-ab-after/tools/fgds
fi

# A directory on a real disk (tmpfs or overlayfs would hide O_DIRECT).
source tests/device/odirect_dir.sh
DISK=$(odirect_dir /var/tmp /root /tmp)
[ -n "$DISK" ] || { echo "no directory takes O_DIRECT"; exit 1; }
DISK=$DISK/fgds-ab
rm -rf "$DISK"
mkdir -p "$DISK"
cleanup() {
  local side
  for side in before after; do
    "$AFTER" umount "$DISK/$side/mnt" 2>/dev/null || umount -l "$DISK/$side/mnt" 2>/dev/null
  done
  rm -rf "$DISK"
}
trap cleanup EXIT
for side in before after; do
  bin=$BEFORE
  [ "$side" = after ] && bin=$AFTER
  mkdir -p "$DISK/$side/data" "$DISK/$side/mnt"
  "$bin" mount --data "$DISK/$side/data" "$DISK/$side/mnt" || exit 1
done

# case NAME ARGS...: every round runs both builds, before first in odd
# rounds and after first in even ones (so neither always runs on a machine
# the other just warmed or loaded).
cases=()
run_case() {
  local name=$1 side bin round order
  shift
  cases+=("$name")
  for round in $(seq 1 "$ROUNDS"); do
    order="before after"
    [ $((round % 2)) = 0 ] && order="after before"
    for side in $order; do
      bin=$BEFORE
      [ "$side" = after ] && bin=$AFTER
      step "$name $side round $round"
      timeout 280 "$bin" bench --mount "$DISK/$side/mnt" \
        --backing "$DISK/$side/data" \
        --json "$OUT/ab-$name-$side-$round.json" "$@" 2>&1 |
        grep -vE '^(p50|vs base|$)' | tail -n 12
    done
  done
}

if [ "${FGDS_AB_CPU:-1}" = 1 ]; then
  run_case seq1m-cold --size "$SIZE" --bs 1M --cache cold \
    --modes posix,native,usrbio,usrbio-direct
  run_case seq1m-warm --size "$SIZE" --bs 1M --cache warm \
    --modes posix,native,usrbio
  run_case rand4k-t1 --size 256M --bs 4K --pattern rand --cache warm --qd 32 \
    --threads 1 --modes posix,native,usrbio
fi
if [ "${FGDS_AB_GPU:-0}" = 1 ]; then
  run_case gpu4m --size "$SIZE" --bs 4M --threads 8 --qd 4 \
    --cache "${FGDS_AB_GPU_CACHE:-both}" \
    --modes "${FGDS_AB_GPU_MODES:-libfgds,usrbio-gpu,bounce-baseline}"
fi

step "table (GB/s per round; ratio = mean after / mean before)"
python3 - "$OUT" "$ROUNDS" "${cases[@]}" <<'EOF'
import json, sys, os
out, rounds, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rows(path):
    try:
        return json.load(open(path))["rows"]
    except Exception:
        return []
print("| case | mode | op | cache | before GB/s | after GB/s | after/before | p99 us before / after |")
print("| --- | --- | --- | --- | --- | --- | ---: | --- |")
for case in cases:
    table = {}
    for side in ("before", "after"):
        for r in range(1, rounds + 1):
            for row in rows(os.path.join(out, f"ab-{case}-{side}-{r}.json")):
                key = (row["mode"], row["op"], row["cache"])
                entry = table.setdefault(key, {"before": [], "after": [],
                                               "p99before": [], "p99after": []})
                entry[side].append(row["gb_per_s"] or 0.0)
                entry["p99" + side].append(row.get("p99_us") or 0.0)
    for (mode, op, cache), v in table.items():
        b, a = v["before"], v["after"]
        ratio = (sum(a) / len(a)) / (sum(b) / len(b)) if a and b and sum(b) else float("nan")
        fmt = lambda xs: " / ".join(f"{x:.3f}" for x in xs)
        med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
        p99 = f"{med(v['p99before']):.0f} / {med(v['p99after']):.0f}"
        print(f"| {case} | {mode} | {op} | {cache} | {fmt(b)} | {fmt(a)} | {ratio:.2f} | {p99} |")
EOF
