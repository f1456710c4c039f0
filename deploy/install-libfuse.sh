#!/usr/bin/env bash
# Builds libfuse 3.18.3 from Debian's own source package (the unstable
# suite's fuse3 3.18.3-1) into a private prefix, /opt/fgds/libfuse-3.18.3,
# for the daemon: Debian 12's libfuse 3.14 cannot ask the kernel for FUSE
# passthrough or FUSE over io_uring. The build (CMakeLists.txt) prefers
# this prefix and links the daemon with an rpath to it; without it, the
# daemon builds against the system's 3.14 and says at mount which features
# are off.
#
# Fast when done: an installed prefix (its stamp names the .dsc checksum)
# ends the script at once. A failed build leaves no prefix behind: the
# files are installed into a staging directory beside the prefix and
# renamed into place only when complete.
#
# The source package is checked against the .dsc's SHA-256 pinned here
# (its MD5 is in the suite's Sources index); dpkg-source then checks the
# tarballs against the .dsc's own checksums, and we check their SHA-256
# again. Downloads are kept in FGDS_DEPS_CACHE (default
# /var/cache/fgds/deps), so a rebuild needs no network.
#
# Environment: FGDS_LIBFUSE_PREFIX (default /opt/fgds/libfuse-3.18.3),
# FGDS_DEPS_CACHE, FGDS_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

version=3.18.3
debian_revision=1
prefix=${FGDS_LIBFUSE_PREFIX:-/opt/fgds/libfuse-$version}
cache=${FGDS_DEPS_CACHE:-/var/cache/fgds/deps}
mirror=${FGDS_DEBIAN_MIRROR:-http://deb.debian.org/debian}

dsc=fuse3_${version}-${debian_revision}.dsc
dsc_sha256=90396d7bd6bdb2f7d414babeaaf6a9c637a13bdb7d18e28c4e34432ba9b425bc
stamp="$prefix/.fgds-source"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$dsc $dsc_sha256" ]; then
  echo "install-libfuse: libfuse $version present in $prefix"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-libfuse: libfuse $version missing in $prefix; run as root" >&2
  exit 1
fi

mkdir -p "$cache"
fetch() {
  local name=$1
  [ -s "$cache/$name" ] && return 0
  echo "install-libfuse: downloading $name"
  curl -fsSL --retry 3 -o "$cache/$name.part" \
    "$mirror/pool/main/f/fuse3/$name"
  mv "$cache/$name.part" "$cache/$name"
}
check() {
  local name=$1 want=$2
  local got
  got=$(sha256sum "$cache/$name" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    rm -f "$cache/$name"  # a bad download must not stay cached
    echo "install-libfuse: $name has SHA-256 $got, expected $want" >&2
    exit 1
  fi
}

fetch "$dsc"
check "$dsc" "$dsc_sha256"
# The .dsc lists every file of the source package with its SHA-256.
files=$(awk '/^Checksums-Sha256:/{p=1; next} /^[^ ]/{p=0} p{print $1, $3}' \
  "$cache/$dsc")
while read -r sum name; do
  fetch "$name"
  check "$name" "$sum"
done <<<"$files"

work=$(mktemp -d /tmp/fgds-libfuse.XXXXXX)
stage="$(dirname "$prefix")/.$(basename "$prefix").stage.$$"
cleanup() { rm -rf "$work" "$stage"; }
trap cleanup EXIT

# Debian's patches (if the package has any) are applied by dpkg-source -x;
# the signature is not checked (no keyring here), the pinned checksum is.
# Where dpkg-dev is missing (the device machine's Ubuntu image), the same by
# hand: the upstream tarball, Debian's directory over it, its patch series.
if command -v dpkg-source >/dev/null; then
  (cd "$work" && dpkg-source --no-check -x "$cache/$dsc" src >/dev/null)
else
  mkdir "$work/src"
  tar -xzf "$cache/fuse3_${version}.orig.tar.gz" -C "$work/src" \
    --strip-components=1
  tar -xJf "$cache/fuse3_${version}-${debian_revision}.debian.tar.xz" \
    -C "$work/src"
  if [ -f "$work/src/debian/patches/series" ]; then
    grep -v '^#' "$work/src/debian/patches/series" | while read -r patch _; do
      [ -n "$patch" ] && patch -d "$work/src" -p1 -s \
        <"$work/src/debian/patches/$patch"
    done
  fi
fi
meson=(meson)
command -v meson >/dev/null || meson=(python3 -m mesonbuild.mesonmain)
# io_uring support needs liburing (with IORING_SETUP_SQE128) and libnuma;
# meson finds both (install-deps.sh installs them). No utilities, examples
# or tests: the daemon needs only the library, and fusermount3 stays the
# system's.
"${meson[@]}" setup "$work/build" "$work/src" --prefix="$prefix" --libdir=lib \
  --buildtype=release -Dutils=false -Dexamples=false -Dtests=false \
  -Dinitscriptdir= -Duseroot=false -Denable-io-uring=true \
  >"$work/meson.log" 2>&1 || { cat "$work/meson.log" >&2; exit 1; }
if ! grep -q "liburing linking and SQE128 support.*YES" "$work/meson.log"; then
  echo "install-libfuse: warning: built without io_uring support" >&2
fi
ninja -C "$work/build" >"$work/ninja.log" 2>&1 ||
  { tail -n 40 "$work/ninja.log" >&2; exit 1; }
DESTDIR="$stage" "${meson[@]}" install -C "$work/build" --quiet >/dev/null
echo "$dsc $dsc_sha256" >"$stage$prefix/.fgds-source"
rm -rf "$prefix"  # a prefix without the right stamp is stale or partial
mkdir -p "$(dirname "$prefix")"
mv "$stage$prefix" "$prefix"
echo "install-libfuse: installed libfuse $version in $prefix"
