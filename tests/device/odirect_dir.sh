#!/bin/bash
# tests/device/odirect_dir.sh: sourced by deps.sh and by scripts that run
# without carried packages (ab_bench.sh on this machine).
# odirect_dir DIR...: prints the first DIR whose filesystem takes O_DIRECT
# (tmpfs and overlayfs would hide it), or nothing.
odirect_dir() {
  local d
  for d in "$@"; do
    [ -d "$d" ] || continue
    if dd if=/dev/zero of="$d/.fgds-odirect-probe" bs=4096 count=1 \
      oflag=direct status=none 2>/dev/null; then
      rm -f "$d/.fgds-odirect-probe"
      echo "$d"
      return
    fi
    rm -f "$d/.fgds-odirect-probe"
  done
}
