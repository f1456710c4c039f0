#!/usr/bin/env bash
# The data half of issue 16's bench: POSIX I/O through an fgds mount against
# the same I/O on the directory it serves, in the same run (`fgds bench
# --modes posix,native`): 1 MiB sequential and 4 KiB random, reads (cold
# and page-cached) and writes (with and without the final fsync), 1 and 4
# threads. Prints one table with each ratio and whether it meets the goal
# (>= 0.95x), and the kernel, libfuse and features the mount ran with.
#
# Each case runs --rounds times (default 2), the two modes' order swapped
# every round, and each mode keeps its best round: the ratio is best mount
# over best native. On the VMs here, whichever mode runs first in a pair
# is often slowed for reasons outside both (1 MiB writes without fsync
# measured 0.12x and 1.17x in consecutive pairs on the development VM,
# native's own speed swinging 3-6 GB/s: the host backs guest memory that
# was freed and is touched again at its own pace), so a single pair
# mostly measured its order.
#
# usage: tests/perf/posix_vs_native.sh [--passthrough MODE] [--seq-size N]
#                                       [--rand-size N] [--goal R]
#                                       [--fuse-uring MODE] [--rounds N]
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
rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --passthrough) passthrough=$2; shift 2 ;;
    --seq-size) seq_size=$2; shift 2 ;;
    --rand-size) rand_size=$2; shift 2 ;;
    --goal) goal=$2; shift 2 ;;
    --fuse-uring) fuse_uring=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
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
    for ((round = 0; round < rounds; round++)); do
      modes=posix,native
      [ $((round % 2)) = 1 ] && modes=native,posix
      "$fgds" bench --mount "$mnt" --backing "$data" --modes "$modes" \
        --pattern "$pattern" --bs "$bs" --size "$size" --threads "$threads" \
        --cache both --json "$results/$pattern-$threads-$round.json" >/dev/null
    done
  done
done

echo "kernel $(uname -r); $(grep '^# features: ' "$mnt/.fgds/stats" | cut -c13-)"
python3 - "$goal" "$results"/*.json <<'EOF'
import json, sys
goal = float(sys.argv[1])
def rate(r):
    return r["gb_per_s"] if r["block_size"] >= (1 << 20) else r["iops"]
# Each mode's best round per case (see the header), and every round's
# rate for the rounds column.
best, seen = {}, {}
for path in sys.argv[2:]:
    for r in json.load(open(path))["rows"]:
        key = (r["mode"], r["op"], r["pattern"], r["threads"], r["cache_wanted"])
        seen.setdefault(key, []).append(rate(r))
        if key not in best or rate(r) > rate(best[key]):
            best[key] = r
rows = [r for key, r in sorted(best.items()) if key[0] == "posix"]
native = {key[1:]: r for key, r in best.items() if key[0] == "native"}
print(f"{'op':<14}{'pattern':<8}{'bs':>5}{'thr':>4} {'cache':<6}"
      f"{'mount':>12}{'native':>12}{'ratio':>8}")
missed = 0
for r in rows:
    if r["mode"] != "posix":
        continue
    key = (r["op"], r["pattern"], r["threads"], r["cache_wanted"])
    n = native[key]
    small = r["block_size"] < (1 << 20)
    unit = (lambda x: f"{x['iops'] / 1000:.1f}k IOPS") if small else \
           (lambda x: f"{x['gb_per_s']:.2f} GB/s")
    ratio = rate(r) / rate(n) if rate(n) > 0 else None
    # Each round's own ratio (rounds in file order, the same for both).
    spread = "/".join(f"{p / q:.2f}" if q > 0 else "-" for p, q in
                      zip(seen[("posix",) + key], seen[("native",) + key]))
    ok = ratio is not None and ratio >= goal
    missed += not ok
    bs = f"{r['block_size'] // 1024}K" if small else "1M"
    print(f"{r['op']:<14}{r['pattern']:<8}{bs:>5}{r['threads']:>4} "
          f"{r['cache']:<6}{unit(r):>12}{unit(n):>12}"
          f"{ratio if ratio is not None else float('nan'):>7.2f}x"
          f"  (rounds {spread}){'' if ok else '  < goal'}")
print(f"{missed} of the ratios below {goal}x")
sys.exit(1 if missed else 0)
EOF
