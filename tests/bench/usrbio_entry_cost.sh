#!/bin/bash
# tests/bench/usrbio_entry_cost.sh: what the daemon spends per usrbio ring
# entry, in numbers that do not depend on the machine's load (issue 17):
# the daemon's user-space instructions per cached 4 KiB read entry
# (valgrind --tool=callgrind; on VMs without a PMU `perf stat -e
# instructions` is not there), and its system calls per entry (strace -c).
#
# The workload is fixed (tests/bench/usrbio_entry_driver.c: one ring, qd
# 32, 4 KiB reads at pseudo-random offsets of a 64 MiB cached file; no
# spinning, batches start at once). Each count is the difference between a
# run of N1 and one of N2 entries on the same daemon, divided by N2 - N1,
# so the session's setup (open, registration, teardown) drops out.
#
# Usage: tests/bench/usrbio_entry_cost.sh LABEL=BUILD_DIR [LABEL=BUILD_DIR...]
#   (as root; needs FUSE, valgrind, strace). Each build is measured the same
#   way in turn; FGDS_COST_OPTS adds daemon options (e.g. "--usrbio-fixed 0"),
#   FGDS_COST_N1/N2 the entry counts (default 4000/20000).
# Exit 77 (skip) without root, /dev/fuse, valgrind or strace.
set -u -o pipefail
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || ! command -v valgrind >/dev/null ||
  ! command -v strace >/dev/null; then
  echo "skipped: needs root, /dev/fuse, valgrind and strace"
  exit 77
fi
N1=${FGDS_COST_N1:-4000}
N2=${FGDS_COST_N2:-20000}
# --io-workers 0: no io_uring engine threads (an engine worker sleeps in
# io_uring_enter, which valgrind does not expect to block: it would hold
# valgrind's thread lock there and stop the daemon). Cached reads never
# reach the engine: the ring worker copies them itself.
OPTS="--io-workers 0 ${FGDS_COST_OPTS:-}"
WORK=$(mktemp -d /var/tmp/fgds-cost.XXXXXX)
DAEMON=
cleanup() {
  [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null
  for m in "$WORK"/*/mnt; do
    mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
  done
  [ -n "$DAEMON" ] && wait "$DAEMON" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts `fgds mount -f` (under $1, a wrapper command or "") for build $2 in
# $3; sets DAEMON to the daemon's pid.
start_daemon() {
  local wrap=$1 build=$2 dir=$3
  mkdir -p "$dir/data" "$dir/mnt"
  [ -f "$dir/data/f" ] || head -c 64M /dev/urandom >"$dir/data/f"
  # shellcheck disable=SC2086
  $wrap "$build/tools/fgds" mount -f --data "$dir/data" $OPTS "$dir/mnt" \
    >"$dir/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 600); do
    [ -e "$dir/mnt/f" ] && return 0
    sleep 0.1
  done
  echo "the daemon did not mount; its log:" >&2
  cat "$dir/daemon.log" >&2
  return 1
}
stop_daemon() {
  local dir=$1
  fusermount3 -u "$dir/mnt" 2>/dev/null || umount -l "$dir/mnt"
  wait "$DAEMON" 2>/dev/null
  DAEMON=
}

# Instructions of the daemon (all threads) while `driver COUNT` runs.
callgrind_run() {
  local build=$1 dir=$2 count=$3 out
  callgrind_control -z "$DAEMON" >/dev/null 2>&1
  "$build/tests/bench/usrbio_entry_driver" "$dir/mnt/f" "$count" >/dev/null ||
    return 1
  callgrind_control -d "$DAEMON" >/dev/null 2>&1
  sleep 0.5
  out=$(ls -t "$dir"/cg.out.*.* | head -1)
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
  # FGDS_COST_KEEP=DIR keeps each build's last profile there (for
  # callgrind_annotate).
  if [ -n "${FGDS_COST_KEEP:-}" ]; then
    mkdir -p "$FGDS_COST_KEEP" && cp "$out" "$FGDS_COST_KEEP/$(basename "$dir").$count.cg"
  fi
  rm -f "$dir"/cg.out.*.*
}

# System calls of the daemon (all threads) while `driver COUNT` runs: the
# strace -c table, one "name calls" line each.
strace_run() {
  local build=$1 dir=$2 count=$3 tracer
  strace -f -c -o "$dir/strace.out" -p "$DAEMON" 2>/dev/null &
  tracer=$!
  sleep 1
  "$build/tests/bench/usrbio_entry_driver" "$dir/mnt/f" "$count" >/dev/null ||
    return 1
  kill -INT "$tracer"
  wait "$tracer" 2>/dev/null
  awk 'NF >= 5 && $1 ~ /^[0-9.]+$/ && $NF != "total" {print $NF, $4}' \
    "$dir/strace.out"
}

printf '%-10s %14s %10s   %s\n' build instr/entry syscalls "per entry, by call"
for spec in "$@"; do
  label=${spec%%=*}
  build=$(cd "${spec#*=}" && pwd) || exit 1
  dir=$WORK/$label
  mkdir -p "$dir"
  start_daemon "valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file=$dir/cg.out.%p" \
    "$build" "$dir" || exit 1
  cat "$dir/data/f" >/dev/null
  # Warm: the pages, the daemon's tables, its threads' first batches.
  "$build/tests/bench/usrbio_entry_driver" "$dir/mnt/f" 2000 >/dev/null || exit 1
  i1=$(callgrind_run "$build" "$dir" "$N1") || exit 1
  i2=$(callgrind_run "$build" "$dir" "$N2") || exit 1
  stop_daemon "$dir"
  start_daemon "" "$build" "$dir" || exit 1
  cat "$dir/data/f" >/dev/null
  "$build/tests/bench/usrbio_entry_driver" "$dir/mnt/f" 2000 >/dev/null || exit 1
  strace_run "$build" "$dir" "$N1" >"$dir/s1" || exit 1
  strace_run "$build" "$dir" "$N2" >"$dir/s2" || exit 1
  stop_daemon "$dir"
  per_call=$(awk -v n="$((N2 - N1))" '
    FNR == NR {a[$1] = $2; next}
    {d = ($2 - a[$1]) / n; if (d > 0.001) printf "%s %.3f  ", $1, d; t += d}
    END {printf "| total %.3f", t}' "$dir/s1" "$dir/s2")
  awk -v a="$i1" -v b="$i2" -v n="$((N2 - N1))" -v l="$label" -v s="$per_call" \
    'BEGIN {printf "%-10s %14.0f   %s\n", l, (b - a) / n, s}'
done
