#!/usr/bin/env bash
# Packs the guest's initramfs: ROOT (which already holds /lab) plus busybox
# with all its applets, /init, and the shared libraries of every program
# under ROOT/lab/bin and of the host programs listed in NEEDS (one path a
# line, # comments; copied to the same path). Writes OUT (cpio, gzip).
# INIT (default: lab/init, the kmod lab's) becomes /init; the rdma lab
# (tests/rdma/) passes its own.
#   initramfs.sh ROOT OUT [NEEDS [INIT]]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=${1:?usage: initramfs.sh ROOT OUT [NEEDS]}
out=${2:?usage: initramfs.sh ROOT OUT [NEEDS]}
needs=${3:-}
init=${4:-$here/init}

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,mnt}
cp /bin/busybox "$root/bin/busybox"
applets=$(/bin/busybox --list-full)
for applet in $applets; do
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
[ -e "$root/dev/console" ] || mknod -m 600 "$root/dev/console" c 5 1
install -m 755 "$init" "$root/init"

# copy_libs FILE: the shared libraries FILE loads, to their host paths.
copy_libs() {
  local lib
  for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
    [ -e "$root$lib" ] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
if [ -n "$needs" ] && [ -f "$needs" ]; then
  while read -r f _; do
    case $f in ''|'#'*) continue ;; esac
    mkdir -p "$root$(dirname "$f")"
    # --remove-destination: an applet's link to /bin/busybox may be there,
    # and a plain cp would write through it, onto the host's busybox.
    cp -L --remove-destination "$f" "$root$f"
    copy_libs "$f"
  done <"$needs"
fi
for f in "$root"/lab/bin/*; do
  [ -f "$f" ] && copy_libs "$f"
done

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
