#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a mounted /mnt/fgds:
# installs the dependencies, builds, installs /usr/local/sbin/fgds (and
# /usr/local/libexec/fgds/fgds-bench, which `fgds bench` runs), the client
# libraries (libfgds.so.0, libfgds_usrbio.so.0, headers, pkg-config and
# CMake files), the Python package (importable by the system python3) and
# the systemd unit, and mounts /mnt/fgds over /var/lib/fgds/data. Safe to
# re-run: a running mount is replaced by one of the freshly built binary.
# FGDS_FUSE_URING=1 also turns on FUSE over io_uring at each start (a
# kernel-wide switch; deploy/fgds.default says why it is off by default).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mountpoint=${FGDS_MOUNTPOINT:-/mnt/fgds}
data=${FGDS_DATA:-/var/lib/fgds/data}
prefix=${FGDS_PREFIX:-/usr/local}

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: run as root (sudo $0): fgds serves all users of the machine" >&2
  exit 1
fi

"$repo/deploy/install-deps.sh"

build="$repo/build-release"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFGDS_BUILD_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$build" -j"$(nproc)"
cmake --install "$build" >/dev/null
ldconfig  # libfgds.so.0 and libfgds_usrbio.so.0 for programs linked to them

# The Python package sits beside the libraries (<libdir>/fgds/python); a
# .pth file in the system python3's site directory puts it on sys.path.
# Any other Python (a venv, conda) imports it with
# PYTHONPATH=<that directory>, or a .pth file of its own.
python_dir=$(ls -d "$prefix"/lib*/fgds/python | head -1)
system_python=$(command -v /usr/bin/python3 || command -v python3 || true)
if [ -n "$system_python" ]; then
  site=$("$system_python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  mkdir -p "$site"
  echo "$python_dir" >"$site/fgds.pth"
  echo "setup: python3 imports fgds from $python_dir ($site/fgds.pth)"
fi
install -m 0644 "$repo/deploy/fgds.service" /etc/systemd/system/fgds.service
[ -f /etc/default/fgds ] || install -m 0644 "$repo/deploy/fgds.default" /etc/default/fgds
# FGDS_FUSE_URING=0|1 given to this script is kept in /etc/default/fgds,
# where the unit and the direct start below read it.
case "${FGDS_FUSE_URING:-}" in
  "") ;;
  0 | 1)
    sed -i '/^FGDS_FUSE_URING=/d' /etc/default/fgds
    echo "FGDS_FUSE_URING=$FGDS_FUSE_URING" >>/etc/default/fgds
    ;;
  *) echo "setup: FGDS_FUSE_URING must be 0 or 1, not '$FGDS_FUSE_URING'" >&2; exit 1 ;;
esac
mkdir -p "$mountpoint" "$data"

fgds="$prefix/sbin/fgds"
is_mounted() {  # an fgds mount at exactly $mountpoint
  awk -v m="$mountpoint" '$5 == m { for (i = 7; i < NF; i++) if ($i == "-") { print $(i + 1); break } }' \
    /proc/self/mountinfo | grep -x fuse.fgds >/dev/null
}
if is_mounted; then
  echo "setup: replacing the running mount at $mountpoint"
  "$fgds" umount "$mountpoint" || "$fgds" umount -l "$mountpoint"
fi

if [ -d /run/systemd/system ] && [ "$mountpoint" = /mnt/fgds ]; then
  systemctl daemon-reload
  systemctl enable fgds.service >/dev/null 2>&1
  systemctl restart fgds.service
  # The unit runs the daemon in the foreground; wait for the mount.
  for _ in $(seq 100); do
    is_mounted && break
    sleep 0.1
  done
else
  # No systemd (containers, CI): run the daemon directly; it returns once
  # the mount is live. FGDS_FUSE_URING=1 turns on FUSE over io_uring
  # first, as the unit does.
  if grep -qx 'FGDS_FUSE_URING=1' /etc/default/fgds; then
    echo 1 >/sys/module/fuse/parameters/enable_uring 2>/dev/null ||
      echo "setup: this kernel has no FUSE over io_uring; /dev/fuse it is" >&2
  fi
  "$fgds" mount --data "$data" "$mountpoint"
fi

is_mounted || {
  echo "setup: $mountpoint did not come up; see journalctl -u fgds" >&2
  exit 1
}
echo "setup: $mountpoint is mounted (data in $data)."
echo "       try: echo hello > $mountpoint/hello && fgds stat $mountpoint"
