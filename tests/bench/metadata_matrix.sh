#!/usr/bin/env bash
# Runs tests/bench/metadata.py for each given fgds binary, each with
# FUSE over io_uring off and on, one after another in one script, so
# that builds (e.g. before and after a change) and transports compare
# under the same machine load. Each metadata.py run measures its own
# native column, so every ratio is against native in the same run.
#
# usage (as root): tests/bench/metadata_matrix.sh [-u MODES] FGDS... \
#                      [-- METADATA_PY_ARGS...]
#   -u MODES  fuse-uring modes to run, comma-separated (default off,on)
# e.g. tests/bench/metadata_matrix.sh /tmp/fgds-before build/tools/fgds \
#          -- --tmpfs --files 20000 --repeat 3
#
# "on" needs the fuse module's enable_uring (Linux 6.14+): this script
# sets it to Y for those runs and puts the old value back at the end,
# whatever happens. It is a system-wide setting: other FUSE mounts made
# meanwhile see it too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
knob=/sys/module/fuse/parameters/enable_uring
modes=off,on
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    -u) modes=$2; shift 2 ;;
    --) shift; break ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 [-u MODES] FGDS... [-- ARGS]" >&2; exit 2; }
saved=""
if [ -e "$knob" ]; then saved=$(cat "$knob"); fi
restore() { if [ -n "$saved" ]; then echo "$saved" > "$knob" || true; fi; }
trap restore EXIT
echo "kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -ra mode_list <<<"$modes"
for mode in "${mode_list[@]}"; do
  if [ "$mode" = on ]; then
    if ! echo Y > "$knob" 2>/dev/null; then
      echo "cannot set $knob: skipping --fuse-uring on" >&2
      continue
    fi
  elif [ -n "$saved" ]; then
    echo "$saved" > "$knob"
  fi
  for bin in "${bins[@]}"; do
    echo "=== $bin --fuse-uring $mode (enable_uring=$(cat "$knob" 2>/dev/null))"
    python3 "$here/metadata.py" --fgds "$bin" --mount-arg=--fuse-uring \
      --mount-arg="$mode" "$@"
  done
done
