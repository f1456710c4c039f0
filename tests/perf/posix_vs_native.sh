#!/usr/bin/env bash
# The data half of issue 16's bench: POSIX I/O through an fgds mount against
# the same I/O on the directory it serves, in the same run (`fgds bench
# --modes posix,native`): 1 MiB sequential and 4 KiB random, reads (cold
# and page-cached) and writes (with and without the final fsync), 1 and 4
# threads. Prints one table with each ratio and whether it meets the goal
# (>= 0.95x), and the kernel, libfuse and features the mount ran with.
#
# usage: tests/perf/posix_vs_native.sh [--passthrough MODE] [--seq-size N]
#                                       [--rand-size N] [--goal R]
#                                       [--fuse-uring MODE]
#   FGDS=path/to/fgds (default: build/tools/fgds of this checkout).
# Mounts a private fgds over a private directory under ${TMPDIR:-/var/tmp}
# (not tmpfs: the backing file system should be a disk's), and removes both.
# Needs root (the mount, and dropping the page cache for cold reads).
# Exits 1 when a ratio misses the goal.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
fgds=${FGDS:-$repo/build/tools/fgds}
passthrough=auto
fuse_uring=auto
seq_size=1G
rand_size=128M
goal=0.95
while [ $# -gt 0 ]; do
  case $1 in
    --passthrough) passthrough=$2; shift 2 ;;
    --seq-size) seq_size=$2; shift 2 ;;
    --rand-size) rand_size=$2; shift 2 ;;
    --goal) goal=$2; shift 2 ;;
    --fuse-uring) fuse_uring=$2; shift 2 ;;
    *) echo "posix_vs_native: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$fgds" ] || { echo "posix_vs_native: no fgds at $fgds (FGDS=...)" >&2; exit 2; }

root=$(mktemp -d "${TMPDIR:-/var/tmp}/fgds-perf.XXXXXX")
mnt=$root/mnt
data=$root/data
mkdir -p "$mnt" "$data"
cleanup() {
  "$fgds" umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
"$fgds" mount --data "$data" --passthrough "$passthrough" \
  --fuse-uring "$fuse_uring" "$mnt"

results=$root/results
mkdir -p "$results"
for case in "seq 1M $seq_size" "rand 4K $rand_size"; do
  read -r pattern bs size <<<"$case"
  for threads in 1 4; do
    "$fgds" bench --mount "$mnt" --backing "$data" --modes posix,native \
      --pattern "$pattern" --bs "$bs" --size "$size" --threads "$threads" \
      --cache both --json "$results/$pattern-$threads.json" >/dev/null
  done
done

echo "kernel $(uname -r); $(grep '^# features: ' "$mnt/.fgds/stats" | cut -c13-)"
python3 - "$goal" "$results"/*.json <<'EOF'
import json, sys
goal = float(sys.argv[1])
rows = []
for path in sys.argv[2:]:
    rows += json.load(open(path))["rows"]
native = {(r["op"], r["pattern"], r["threads"], r["cache_wanted"]): r
          for r in rows if r["mode"] == "native"}
print(f"{'op':<14}{'pattern':<8}{'bs':>5}{'thr':>4} {'cache':<6}"
      f"{'mount':>12}{'native':>12}{'ratio':>8}")
missed = 0
for r in rows:
    if r["mode"] != "posix":
        continue
    n = native[(r["op"], r["pattern"], r["threads"], r["cache_wanted"])]
    small = r["block_size"] < (1 << 20)
    unit = (lambda x: f"{x['iops'] / 1000:.1f}k IOPS") if small else \
           (lambda x: f"{x['gb_per_s']:.2f} GB/s")
    ratio = r["ratio"]
    ok = ratio is not None and ratio >= goal
    missed += not ok
    bs = f"{r['block_size'] // 1024}K" if small else "1M"
    print(f"{r['op']:<14}{r['pattern']:<8}{bs:>5}{r['threads']:>4} "
          f"{r['cache']:<6}{unit(r):>12}{unit(n):>12}"
          f"{ratio if ratio is not None else float('nan'):>7.2f}x"
          f"{'' if ok else '  < goal'}")
print(f"{missed} of the ratios below {goal}x")
sys.exit(1 if missed else 0)
EOF
