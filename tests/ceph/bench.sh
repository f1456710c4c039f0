#!/usr/bin/env bash
# Compares the ways into a CephFS on one throwaway cluster, in one run:
#   libcephfs  the ceiling: cephfs_baseline calling libcephfs in-process
#   ceph-fuse  Ceph's own FUSE client (fgds bench's posix mode on it)
#   fgds posix / fgds usrbio   through `fgds mount --backend ceph`
#   agents posix / agents usrbio   the same with `--agents` (file data
#              through a local `fgds agent --ceph-conf` over TCP; docs/agent.md)
# for 1 MiB sequential and 4 KiB random reads and writes (each way reads
# what it has just written, after fgds bench drops the kernel's page cache:
# the client's own libcephfs cache may still hold part of it, as it does
# for the libcephfs row; libcephfs-cold reads from a fresh session), and
# prints each one's MB/s and IOPS and its ratio to libcephfs. The kernel's
# CephFS client is left out where the running kernel lacks it (no "ceph" in
# /proc/filesystems; modules cannot be loaded here). fgds-cold-posix reads
# libcephfs's files through the fgds mount, cold as libcephfs-cold is;
# reads get a second ratio, over libcephfs-cold. BENCH_BEFORE=FGDS_BINARY
# adds the way "before": posix and usrbio through a mount of that binary
# (an earlier build), for a before/after comparison on one cluster.
# BENCH_MOUNT_ARGS: extra `fgds mount` options for the fgds way (e.g.
# --writeback-cache), to compare a setting against "before".
#
#   tests/ceph/bench.sh BUILD_DIR      (as root; ceph packages and ceph-fuse)
# Environment: BENCH_SIZE (default 256M), BENCH_RAND_SIZE (64M),
# BENCH_WAYS (default "fgds agents ceph-fuse": which of those to run; the
# libcephfs rows always run), and start-cluster.sh's CEPH_* (default: 3
# memstore OSDs, pools of size 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: bench.sh BUILD_DIR}" && pwd)
size=${BENCH_SIZE:-256M}
rsize=${BENCH_RAND_SIZE:-64M}
ways=${BENCH_WAYS:-fgds agents ceph-fuse}
fgds=$build/tools/fgds
before=${BENCH_BEFORE:-}
if [ -n "$before" ]; then
  [ -x "$before" ] || { echo "bench: BENCH_BEFORE=$before is not executable" >&2; exit 1; }
  [[ " $ways " == *" before "* ]] || ways="$ways before"
fi
baseline=$build/tests/ceph/cephfs_baseline
for f in "$fgds" "$baseline"; do
  [ -x "$f" ] || { echo "bench: $f not built" >&2; exit 1; }
done
command -v ceph-fuse >/dev/null || { echo "bench: ceph-fuse not installed" >&2; exit 1; }

T=$(mktemp -d /tmp/fgds-ceph-bench.XXXXXX)
out=$("$here/start-cluster.sh")
D=$(sed -n 's/^CEPH_CLUSTER_DIR=//p' <<<"$out")
conf=$D/ceph.conf
agent_pid=
cleanup() {
  umount "$T/fgds" 2>/dev/null || umount -l "$T/fgds" 2>/dev/null || true
  umount "$T/fgds-agents" 2>/dev/null || umount -l "$T/fgds-agents" 2>/dev/null || true
  umount "$T/fgds-before" 2>/dev/null || umount -l "$T/fgds-before" 2>/dev/null || true
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
  umount "$T/cf" 2>/dev/null || umount -l "$T/cf" 2>/dev/null || true
  "$here/stop-cluster.sh" "$D"
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/cf" "$T/fgds" "$T/fgds-agents" "$T/fgds-before" "$T/data"
ceph-fuse -c "$conf" --log_file="$D/log/ceph-fuse.log" "$T/cf" >/dev/null
mkdir "$T/cf/bench" "$T/cf/bench-agents"
# shellcheck disable=SC2086 # options, split on purpose
"$fgds" mount --backend ceph --ceph-conf "$conf" --ceph-root /bench \
  --data "$T/data" ${BENCH_MOUNT_ARGS:-} "$T/fgds"
mounts=("$T/fgds" "$T/fgds-agents")
if [ -n "$before" ]; then
  # The whole file system: its cold reads below find the baseline's files.
  "$before" mount --backend ceph --ceph-conf "$conf" \
    --data "$T/data" "$T/fgds-before"
  mounts+=("$T/fgds-before")
fi
# An agent of the whole file system on this host, and a mount using it.
head -c 48 /dev/urandom | base64 >"$T/agent.key"
chmod 600 "$T/agent.key"
"$fgds" agent --listen 127.0.0.1:0 --ceph-conf "$conf" --key "$T/agent.key" \
  >"$T/agent.out" 2>&1 &
agent_pid=$!
for _ in $(seq 300); do grep -q ' on ' "$T/agent.out" && break; sleep 0.1; done
agent=$(sed -n '1s/.* on \([^ ]*\) .*/\1/p' "$T/agent.out")
[ -n "$agent" ] || { echo "bench: the agent did not start:" >&2; cat "$T/agent.out" >&2; exit 1; }
"$fgds" mount --backend ceph --ceph-conf "$conf" --ceph-root /bench-agents \
  --agents "$agent" --agent-key "$T/agent.key" --data "$T/data" "$T/fgds-agents"
for m in "${mounts[@]}"; do
  for _ in $(seq 100); do
    [ "$(stat -f -c %T "$m")" = fuseblk ] || [ "$(stat -f -c %T "$m")" = fuse ] && break
    sleep 0.1
  done
done

rows=$T/rows
: >"$rows"
# fgds bench: posix and usrbio through fgds; its posix mode again on the
# ceph-fuse mount (--no-mount-check: not an fgds mount). --backing names
# an unused local directory (the modes run here read no backing files).
for spec in "seq 1M $size" "rand 4K $rsize"; do
  read -r pattern bs sz <<<"$spec"
  for way in $ways; do
    if [ $way = fgds ]; then
      args=(--mount "$T/fgds" --modes posix,usrbio)
    elif [ $way = agents ]; then
      args=(--mount "$T/fgds-agents" --modes posix,usrbio)
    elif [ $way = before ]; then
      args=(--mount "$T/fgds-before" --modes posix,usrbio)
    else
      args=(--mount "$T/cf/bench" --no-mount-check --modes posix)
    fi
    "$fgds" bench "${args[@]}" --backing "$T/data" --pattern "$pattern" \
      --bs "$bs" --size "$sz" --cache cold --json "$T/$way.$pattern.json" \
      >"$T/$way.$pattern.txt" 2>&1 || { cat "$T/$way.$pattern.txt"; exit 1; }
    python3 - "$T/$way.$pattern.json" "$way" >>"$rows" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    way = sys.argv[2]
    name = "ceph-fuse" if way == "ceph-fuse" else way + "-" + r["mode"]
    print(name, r["op"], r["pattern"], r["gb_per_s"] * 1000, r["iops"])
PY
  done
done
# libcephfs in-process, on files of its own: write then read in one
# session (as fgds bench writes then reads through one daemon, whose
# libcephfs cache keeps part of what it wrote), and a cold read from a
# fresh session (libcephfs-cold).
to_bytes() { numfmt --from=iec "$1"; }
for spec in "seq 1048576 $(to_bytes "$size")" "rand 4096 $(to_bytes "$rsize")"; do
  read -r pattern bs sz <<<"$spec"
  f=/bench/baseline.$pattern
  [ "$pattern" = rand ] && "$baseline" "$conf" "$f" write seq 1048576 "$sz" >/dev/null
  "$baseline" "$conf" "$f" writeread "$pattern" "$bs" "$sz" |
    awk '{print "libcephfs", $1, $2, $3, $4}' >>"$rows"
  "$baseline" "$conf" "$f" read "$pattern" "$bs" "$sz" |
    awk '{print "libcephfs-cold", $1, $2, $3, $4}' >>"$rows"
done

# fgds-cold-posix: the baseline's files read through the fgds mount, whose
# daemon never had them (its libcephfs cache is as cold as
# libcephfs-cold's fresh session, and the kernel never cached them on this
# mount): the fair pair to libcephfs-cold, where fgds-posix pairs with
# libcephfs (both read back what their own client just wrote).
for way in fgds before; do
  [[ " $ways " == *" $way "* ]] || continue
  dir=$T/fgds/; [ $way = before ] && dir=$T/fgds-before/bench/
  for spec in "seq 1048576 $(to_bytes "$size")" "rand 4096 $(to_bytes "$rsize")"; do
    read -r pattern bs sz <<<"$spec"
    python3 - "${dir}baseline.$pattern" "$pattern" "$bs" "$sz" <<'PY' |
import os, random, sys, time
path, pattern, bs, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_RDONLY)
blocks = size // bs
rng = random.Random(1)
start = time.monotonic()
for i in range(blocks):
    off = (rng.randrange(blocks) if pattern == "rand" else i) * bs
    if len(os.pread(fd, bs, off)) != bs:
        sys.exit(f"bench: short read of {path} at {off}")
secs = time.monotonic() - start
print("read", pattern, size / secs / 1e6, blocks / secs)
PY
      awk -v w="$way" '{print w "-cold-posix", $1, $2, $3, $4}' >>"$rows"
  done
done

grep '^# agent' "$T/fgds-agents/.fgds/stats" || true
echo "CephFS ways in, one cluster ($(ceph --conf "$conf" osd stat 2>/dev/null | head -1)); $size seq, $rsize rand"
python3 - "$rows" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, op, pattern, mbs, iops = line.split()
    if op not in ("read", "write"): continue  # (write-nofsync)
    rows.setdefault((op, pattern), {})[name] = (float(mbs), float(iops))
# "vs cold": over libcephfs-cold, the fresh session's read (reads only).
print(f"{'test':<12}{'way':<16}{'MB/s':>9}{'IOPS':>10}{'vs libcephfs':>14}{'vs cold':>9}")
for (op, pattern), ways in sorted(rows.items()):
    base = ways.get("libcephfs")
    cold = ways.get("libcephfs-cold")
    for name in ("libcephfs", "libcephfs-cold", "ceph-fuse", "before-posix",
                 "fgds-posix", "before-usrbio", "fgds-usrbio",
                 "before-cold-posix", "fgds-cold-posix", "agents-posix",
                 "agents-usrbio"):
        if name not in ways: continue
        mbs, iops = ways[name]
        ratio = f"{mbs / base[0]:.2f}x" if base and base[0] > 0 else "-"
        cold_ratio = f"{mbs / cold[0]:.2f}x" if cold and cold[0] > 0 else "-"
        print(f"{op + ' ' + pattern:<12}{name:<16}{mbs:>9.1f}{iops:>10.0f}{ratio:>14}{cold_ratio:>9}")
PY
