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
# BENCH_CPU=1 adds a CPU report: the daemon's CPU per request of every fgds
# and agents row (fgds bench's daemon_cpu_ns_per_op: the daemon's process
# CPU clock, ended threads included, so POSIX and usrbio rows alike),
# and the agent's and
# its daemon's CPU per agent request, by op and block size (a sampler reads
# both processes' /proc/PID/stat (user+sys) and the mount's agent counters
# every 50 ms while the agents way runs, and charges each interval to reads
# or writes by which counter moved; intervals where neither or both moved
# are shown apart). docs/remote.md ("The RDMA edge at 400 Gb/s, on paper")
# is built on these figures.
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
# BENCH_CPU's sampler (above): runs until the file STOP exists, then prints
# one line per bucket: "BUCKET agent_ns daemon_ns requests bytes intervals".
cpu_sampler() {
  python3 - "$@" <<'PY'
import os, re, sys, time
agent, daemon, stats, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
tick_ns = 1e9 / os.sysconf("SC_CLK_TCK")
def cpu_ns(pid):
    # utime + stime of the whole process, ended threads included (a sum of
    # /proc/PID/task/*/schedstat would drop a thread's time when it ends:
    # libfuse's idle workers and the agent's connection threads do).
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * tick_ns
def counters():
    c = dict(reads=0, writes=0, read_bytes=0, write_bytes=0)
    for line in open(stats):
        if line.startswith("# agent ") and not line.startswith("# agents:"):
            for k in c:
                m = re.search(rf" {k}=(\d+)", line)
                if m: c[k] += int(m.group(1))
    return c
buckets = {}
prev = (cpu_ns(agent), cpu_ns(daemon), counters())
open(stop + ".ready", "w").close()  # the bench starts after the first sample
while True:
    time.sleep(0.05)
    cur = (cpu_ns(agent), cpu_ns(daemon), counters())
    dr = cur[2]["reads"] - prev[2]["reads"]
    dw = cur[2]["writes"] - prev[2]["writes"]
    name = "read" if dr and not dw else "write" if dw and not dr else \
        "mixed" if dr else "idle"
    b = buckets.setdefault(name, [0, 0, 0, 0, 0])
    b[0] += cur[0] - prev[0]
    b[1] += cur[1] - prev[1]
    b[2] += dr + dw
    b[3] += (cur[2]["read_bytes"] - prev[2]["read_bytes"] +
             cur[2]["write_bytes"] - prev[2]["write_bytes"])
    b[4] += 1
    prev = cur
    if os.path.exists(stop): break
for name, b in buckets.items():
    print(name, *b)
PY
}
agents_daemon_pid=$(sed -n 's/^pid=//p' "$T/fgds-agents/.fgds/session")
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
    sampler=
    if [ -n "${BENCH_CPU:-}" ] && [ $way = agents ]; then
      rm -f "$T/cpu.stop" "$T/cpu.stop.ready"
      cpu_sampler "$agent_pid" "$agents_daemon_pid" "$T/fgds-agents/.fgds/stats" \
        "$T/cpu.stop" >"$T/cpu.$bs" &
      sampler=$!
      for _ in $(seq 100); do [ -e "$T/cpu.stop.ready" ] && break; sleep 0.1; done
    fi
    "$fgds" bench "${args[@]}" --backing "$T/data" --pattern "$pattern" \
      --bs "$bs" --size "$sz" --cache cold --json "$T/$way.$pattern.json" \
      >"$T/$way.$pattern.txt" 2>&1 || { cat "$T/$way.$pattern.txt"; exit 1; }
    [ -n "$sampler" ] && touch "$T/cpu.stop" && wait "$sampler"
    if [ -n "${BENCH_CPU:-}" ] && [ $way != ceph-fuse ]; then
      python3 - "$T/$way.$pattern.json" "$way" >>"$T/cpu.rows" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r["op"] in ("read", "write") and r["daemon_cpu_ns_per_op"] is not None:
        print(f"{sys.argv[2] + '-' + r['mode']:<16}{r['op']:<7}{r['block_size']:>9}"
              f"{r['ops']:>9}{r['daemon_cpu_ns_per_op'] / 1000:>12.1f}"
              f"{r['cpu_s_per_gb']:>12.2f}")
PY
    fi
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
if [ -n "${BENCH_CPU:-}" ]; then
  echo "Daemon CPU per request (fgds bench; usrbio: per entry, posix: per application call)"
  printf '%-16s%-7s%9s%9s%12s%12s\n' row op bs requests "daemon us" "client s/GB"
  cat "$T/cpu.rows"
  echo "Agent and its daemon, CPU per agent request (sampler, posix and usrbio rows together)"
  printf '%-7s%-7s%9s%10s%12s%12s%10s\n' bs bucket requests MiB "agent us" "daemon us" "CPU s"
  for bs in 1M 4K; do
    [ -f "$T/cpu.$bs" ] || continue
    while read -r name ans dns reqs bytes _; do
      awk -v bs="$bs" -v n="$name" -v a="$ans" -v d="$dns" -v r="$reqs" -v b="$bytes" \
        'BEGIN { printf "%-7s%-7s%9d%10.1f%12s%12s%10.2f\n", bs, n, r, b / 1048576,
                 r ? sprintf("%.1f", a / r / 1000) : "-",
                 r ? sprintf("%.1f", d / r / 1000) : "-", (a + d) / 1e9 }'
    done <"$T/cpu.$bs"
  done
fi
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
