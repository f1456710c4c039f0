#!/usr/bin/env bash
# Builds (once) the lab's guest kernel for a kernel series and prints the
# build directory, which is also the tree out-of-tree modules build against.
#   tests/kmod/build-kernel.sh 6.12   # Debian 12's linux-source-6.12
#   tests/kmod/build-kernel.sh 7.2    # sid's linux-source-7.2
#   tests/kmod/build-kernel.sh 6.12 lockdep   # plus guest-kernel-lockdep.config
# The result is cached outside the repository, under $FGDS_LAB_CACHE
# (default /var/cache/fgds-lab), keyed by the source package version and a
# hash of guest-kernel.config, so a fresh machine builds it and later runs
# reuse it.
set -euo pipefail

series=${1:?usage: build-kernel.sh 6.12|7.2 [FLAVOUR]}
# A flavour adds guest-kernel-FLAVOUR.config to the default configuration.
flavour=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
configs=("$here/guest-kernel.config")
[ -z "$flavour" ] || configs+=("$here/guest-kernel-$flavour.config")
cache=${FGDS_LAB_CACHE:-/var/cache/fgds-lab}
jobs=${FGDS_JOBS:-$(nproc)}
mkdir -p "$cache/debs"

log() { echo "build-kernel[$series${flavour:+ $flavour}]: $*" >&2; }

# Sid is reached through a private apt configuration, so the machine's own
# sources (Debian 12) stay untouched.
sid_apt() {
  local d=$cache/sid-apt
  mkdir -p "$d/etc/sources.list.d" "$d/etc/preferences.d" \
           "$d/lists/partial" "$d/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
       "http://deb.debian.org/debian sid main" >"$d/etc/sources.list"
  local opts=(-o "Dir::Etc=$d/etc" -o "Dir::State::Lists=$d/lists"
              -o "Dir::Cache=$d/cache"
              -o "Dir::Etc::SourceParts=$d/etc/sources.list.d")
  if [ -z "$(ls "$d/lists" 2>/dev/null | grep -v partial)" ]; then
    apt-get "${opts[@]}" update -qq >&2
  fi
  apt-get "${opts[@]}" "$@"
}

# Fetches the source package; prints the path of its tarball.
fetch_source() {
  local pkg=linux-source-$series deb
  deb=$(ls "$cache/debs/${pkg}_"*.deb 2>/dev/null | tail -n1 || true)
  if [ -z "$deb" ]; then
    log "downloading $pkg"
    if [ "$series" = 6.12 ]; then
      (cd "$cache/debs" && apt-get download -qq -o APT::Sandbox::User=root "$pkg" >&2)
    else
      (cd "$cache/debs" && sid_apt download -qq -o APT::Sandbox::User=root "$pkg" >&2)
    fi
    deb=$(ls "$cache/debs/${pkg}_"*.deb | tail -n1)
  fi
  local unpack=$cache/pkg-$(basename "$deb" .deb)
  if [ ! -d "$unpack" ]; then
    dpkg -x "$deb" "$unpack.tmp" && mv "$unpack.tmp" "$unpack"
  fi
  ls "$unpack"/usr/src/linux-source-*.tar.xz
}

tarball=$(fetch_source)
key=$( { basename "$tarball"; stat -c %s "$tarball"; cat "${configs[@]}"; } |
      sha256sum | cut -c1-16)
src=$cache/src-$(basename "$tarball" .tar.xz)
# Flavours are named kernel-FLAVOUR-SERIES-HASH, so the pruning below (and
# that of older copies of this script) never takes one flavour for a stale
# build of another.
prefix=$cache/kernel-${flavour:+$flavour-}$series-
out=$prefix$key
if [ -f "$out/.fgds-built" ]; then
  # Last use, for the pruning below.
  touch "$out/.fgds-built"
  echo "$out"
  exit 0
fi

if [ ! -d "$src" ]; then
  log "unpacking $(basename "$tarball")"
  mkdir -p "$src.tmp"
  tar -xJf "$tarball" -C "$src.tmp" --strip-components=1
  mv "$src.tmp" "$src"
fi

rm -rf "$out"
mkdir -p "$out"
log "configuring in $out"
make -s -C "$src" O="$out" tinyconfig >&2
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
  "${configs[@]}" >/dev/null
make -s -C "$src" O="$out" olddefconfig >&2
# Every line of the fragment must have survived dependency resolution.
missing=()
while IFS= read -r line; do
  case $line in CONFIG_*) grep -qx "$line" "$out/.config" || missing+=("$line") ;; esac
done < <(cat "${configs[@]}")
if [ ${#missing[@]} -ne 0 ]; then
  log "config options that did not stick: ${missing[*]}"
  exit 1
fi

log "building with -j$jobs (about 5 minutes on 2 idle cores)"
start=$SECONDS
if ! make -s -C "$src" O="$out" -j"$jobs" all >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log" >&2
  log "kernel build FAILED (log: $out/build.log)"
  exit 1
fi
log "built in $((SECONDS - start)) s"
touch "$out/.fgds-built"
# Builds for other configurations or sources of this series are dead
# weight (about 300 MB each) once nothing uses them; but the cache is shared
# (CI, every branch's lab runs), and another branch may still boot its own
# configuration: remove only builds unused for a week (.fgds-built is
# touched on every use) and half-done ones older than a day.
for old in "$prefix"*; do
  [ "$old" = "$out" ] && continue
  if [ -f "$old/.fgds-built" ]; then
    [ -n "$(find "$old/.fgds-built" -mtime +7)" ] && rm -rf "$old"
  elif [ -n "$(find "$old" -maxdepth 0 -mtime +1)" ]; then
    rm -rf "$old"
  fi
done
echo "$out"
