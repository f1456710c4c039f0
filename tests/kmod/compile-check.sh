#!/usr/bin/env bash
# Compiles kmod/ (fgds.ko) and the test exporter (tests/kmod/exporter/)
# against Debian 12's own kernel header packages, the kernels users of
# Debian 12 run: the newest linux-headers-6.1.0-*-amd64 and
# linux-headers-6.12.*+deb12-amd64 with their -common and linux-kbuild
# packages. The packages are fetched with apt-get download into the lab
# cache and unpacked with dpkg -x, never installed.
# Fails when a module does not build, or on any compiler or modpost warning
# about our sources (neither kernel sets CONFIG_PCI_P2PDMA, so this also
# catches P2PDMA symbols used without a fallback).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lab/lib.sh"

lab_install build-essential dwarves libelf-dev
debs=$lab_cache/debs
mkdir -p "$debs"
work=$(lab_mkwork compile-check)
failed=0
# Build logs stay for a look when a check failed.
trap 'if [ $failed -eq 0 ]; then rm -rf "$work"; else lab_log "logs in $work"; fi' EXIT

# Prints the newest package whose name matches the extended regex $1.
newest_package() {
  local names
  names=$(apt-cache pkgnames linux-headers- | grep -E "$1" || true)
  if [ -z "$names" ]; then   # apt lists never fetched on this machine
    apt-get update -qq
    names=$(apt-cache pkgnames linux-headers- | grep -E "$1")
  fi
  sort -V <<<"$names" | tail -n1
}

# Fetches the -amd64 headers package $1 with the linux-headers-* and
# linux-kbuild-* packages it depends on, unpacks them into one tree, and
# prints the module build directory of that tree.
headers_tree() {
  local pkg=$1 kver=${1#linux-headers-}
  local tree=$lab_cache/headers-$kver
  if [ ! -f "$tree/.fgds-unpacked" ]; then
    local pkgs=("$pkg") dep deb
    for dep in $(apt-cache show --no-all-versions "$pkg" |
                 sed -n 's/^Depends: //p' | tr ',|' '\n\n' | awk '{print $1}' |
                 grep -E '^linux-(headers|kbuild)-'); do
      pkgs+=("$dep")
    done
    lab_log "fetching ${pkgs[*]}"
    # Stale package lists name versions the mirror no longer has.
    (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}" >&2) ||
      { apt-get update -qq &&
        (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}" >&2); }
    rm -rf "$tree"
    mkdir -p "$tree"
    for p in "${pkgs[@]}"; do
      deb=$(ls "$debs/${p}_"*.deb | sort -V | tail -n1)
      dpkg -x "$deb" "$tree"
    done
    # The -amd64 Makefile includes the -common one by absolute path.
    sed -i "s|^include /usr/src/|include $tree/usr/src/|" \
      "$tree/usr/src/linux-headers-$kver/Makefile"
    touch "$tree/.fgds-unpacked"
  fi
  echo "$tree/usr/src/linux-headers-$kver"
}

for regex in '^linux-headers-6\.1\.0-[0-9]+-amd64$' \
             '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$'; do
  pkg=$(newest_package "$regex")
  kdir=$(headers_tree "$pkg")
  kver=${pkg#linux-headers-}
  src=$work/$kver
  lab_copy_sources "$repo" "$src"
  for mod in kmod tests/kmod/exporter; do
    start=$SECONDS
    if lab_build_module "$kdir" "$src/$mod" "$work/$kver-${mod//\//_}.log"; then
      echo "compile-check: $mod against $kver: ok ($((SECONDS - start)) s)"
    else
      echo "compile-check: $mod against $kver: FAILED"
      failed=1
    fi
  done
done
exit $failed
