#!/usr/bin/env bash
# Builds and installs the fgds kernel module with DKMS, so that it is
# rebuilt for every new kernel, then loads it. Safe to re-run: the same
# version is unregistered and registered again, and any other registered
# fgds version is removed first.
#
#   sudo deploy/install-kmod.sh [--load-at-boot] [--no-load]
#        [--kernel VER] [--kernel-source-dir DIR] [--no-packages]
#        [--build-only]
#   sudo deploy/install-kmod.sh --uninstall
#
# --kernel VER builds for another installed kernel (default: the running
# one); --kernel-source-dir DIR builds against a kernel build tree instead
# of /lib/modules/VER/build; --build-only stops after `dkms build` (for a
# kernel that is not installed here, e.g. a test lab's); --no-packages
# installs no packages.
#
# Steps: install dkms and the kernel's headers if missing; create group
# "fgds"; copy kmod/ and include/uapi/ to /usr/src/fgds-<version>/ with
# deploy/dkms.conf (version from kmod/fgds_version.h); dkms add, build,
# install; install the udev rule (/dev/fgds_* root:fgds 0660); with
# --load-at-boot write /etc/modules-load.d/fgds.conf; modprobe fgds unless
# --no-load. `fgds probe` then says whether the direct path works.
# docs/probe.md has the details.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
name=fgds
group=fgds
rules_src="$repo/deploy/udev/99-fgds.rules"
rules_dst=/etc/udev/rules.d/99-fgds.rules
boot_conf=/etc/modules-load.d/fgds.conf

running=$(uname -r)
kver=$running
ksrc=""
load=1
load_at_boot=0
packages=1
uninstall=0
build_only=0

log() { echo "install-kmod: $*"; }
die() { echo "install-kmod: error: $*" >&2; exit 1; }

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

while [ $# -gt 0 ]; do
  case $1 in
    --load-at-boot) load_at_boot=1 ;;
    --no-load) load=0 ;;
    --kernel) kver=${2:?--kernel needs a version}; shift ;;
    --kernel-source-dir) ksrc=${2:?--kernel-source-dir needs a dir}; shift ;;
    --no-packages) packages=0 ;;
    --uninstall) uninstall=1 ;;
    --build-only) build_only=1; load=0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option $1" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "run as root (sudo $0): it installs a kernel module"

# Versions of fgds that DKMS knows, one per line. dkms 3 prints
# "fgds/0.1.0, 6.1.0-18-amd64, x86_64: installed", dkms 2 "fgds, 0.1.0, ...".
registered_versions() {
  command -v dkms >/dev/null || return 0
  dkms status "$name" 2>/dev/null |
    sed -nE "s#^$name[/,] ?([^,:]+).*#\\1#p" | sort -u
}

unregister_all() {
  local v
  for v in $(registered_versions); do
    log "removing $name/$v from DKMS"
    dkms remove -m "$name" -v "$v" --all >/dev/null ||
      die "dkms remove $name/$v failed"
  done
}

if [ "$uninstall" -eq 1 ]; then
  if [ -d /sys/module/$name ]; then
    modprobe -r "$name" || log "warning: $name is in use; it stays loaded until unloaded"
  fi
  unregister_all
  rm -rf /usr/src/$name-*
  rm -f "$rules_dst" "$boot_conf"
  command -v udevadm >/dev/null && udevadm control --reload-rules 2>/dev/null || true
  log "uninstalled (group $group kept)"
  exit 0
fi

# The single source of the version: #define FGDS_KMOD_VERSION "x.y.z".
version_h="$repo/kmod/fgds_version.h"
[ -f "$version_h" ] || die "$version_h is missing"
version=$(sed -nE 's/^#define[[:space:]]+FGDS_KMOD_VERSION[[:space:]]+"([^"]+)".*/\1/p' "$version_h")
[ -n "$version" ] || die "no FGDS_KMOD_VERSION in $version_h"
[ -f "$repo/include/uapi/fgds_ioctl.h" ] || die "include/uapi/fgds_ioctl.h is missing"

# A kernel that cannot load modules is worth saying before anything is
# installed: the build would succeed and the load fail obscurely.
if [ "$kver" = "$running" ] && [ "$load" -eq 1 ]; then
  if [ ! -e /proc/modules ]; then
    die "the running kernel $running cannot load modules (built without CONFIG_MODULES).
  Boot a distribution kernel, or build for another installed kernel:
  $0 --kernel VER --no-load"
  fi
  if [ "$(cat /proc/sys/kernel/modules_disabled 2>/dev/null || echo 0)" = 1 ]; then
    die "module loading is disabled until reboot (kernel.modules_disabled=1); use --no-load to only install"
  fi
fi

# Packages: dkms, and the kernel's headers unless a source dir was given.
need_headers=0
if [ -z "$ksrc" ] && [ ! -e "/lib/modules/$kver/build/Makefile" ]; then
  need_headers=1
fi
if [ "$packages" -eq 1 ] && { ! command -v dkms >/dev/null || [ "$need_headers" -eq 1 ]; }; then
  if command -v apt-get >/dev/null; then
    want=()
    command -v dkms >/dev/null || want+=(dkms)
    if [ "$need_headers" -eq 1 ]; then
      if apt-cache show "linux-headers-$kver" >/dev/null 2>&1 ||
         { apt-get update -qq && apt-cache show "linux-headers-$kver" >/dev/null 2>&1; }; then
        want+=("linux-headers-$kver")
      else
        log "warning: no package linux-headers-$kver (not a Debian/Ubuntu kernel?)"
      fi
    fi
    if [ ${#want[@]} -gt 0 ]; then
      log "installing ${want[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${want[@]}"
    fi
  elif command -v dnf >/dev/null; then
    want=()
    command -v dkms >/dev/null || want+=(dkms)  # from EPEL on RHEL
    [ "$need_headers" -eq 1 ] && want+=("kernel-devel-$kver")
    log "installing ${want[*]}"
    dnf install -y "${want[@]}"
  fi
fi
command -v dkms >/dev/null || die "dkms is not installed (apt-get install dkms)"
if [ -z "$ksrc" ] && [ ! -e "/lib/modules/$kver/build/Makefile" ]; then
  die "no build tree for kernel $kver (/lib/modules/$kver/build).
  Install its headers (Debian: linux-headers-$kver), or pass
  --kernel-source-dir DIR pointing at the tree the kernel was built in."
fi

if [ "$build_only" -eq 0 ] && [ ! -d "/lib/modules/$kver" ]; then
  die "kernel $kver is not installed here (no /lib/modules/$kver); use --build-only to only build"
fi

if [ "$build_only" -eq 0 ] && ! getent group "$group" >/dev/null; then
  log "creating group $group (its members may use /dev/fgds_*)"
  groupadd --system "$group"
fi

# DKMS source tree: kmod/ and include/uapi/ keep their relative layout, which
# the module's Kbuild (-I$(src)/../include/uapi) relies on. Build outputs of
# an in-tree `make` are left behind.
unregister_all
src=/usr/src/$name-$version
log "copying the module sources to $src"
rm -rf "$src"
mkdir -p "$src"
tar -C "$repo" \
  --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
  --exclude='.*.cmd' --exclude='*.a' --exclude='Module.symvers' \
  --exclude='modules.order' --exclude='.tmp_versions' \
  -cf - kmod include/uapi | tar -C "$src" -xf -
sed "s/#MODULE_VERSION#/$version/" "$repo/deploy/dkms.conf" >"$src/dkms.conf"

dkms_kernel=(-k "$kver")
[ -n "$ksrc" ] && dkms_kernel+=(--kernelsourcedir "$ksrc")
log "dkms add, build$( [ "$build_only" -eq 1 ] || echo ", install") $name/$version for kernel $kver"
dkms add -m "$name" -v "$version"
if ! dkms build -m "$name" -v "$version" "${dkms_kernel[@]}"; then
  make_log=/var/lib/dkms/$name/$version/build/make.log
  die "dkms build failed; see $make_log"
fi
if [ "$build_only" -eq 1 ]; then
  log "built $name $version for $kver: $(ls /var/lib/dkms/$name/$version/"$kver"/*/module/$name.ko* 2>/dev/null | head -n1)"
  exit 0
fi
dkms install -m "$name" -v "$version" "${dkms_kernel[@]}" ||
  die "dkms install failed"

install -D -m 0644 "$rules_src" "$rules_dst"
if command -v udevadm >/dev/null && [ -d /run/udev ]; then
  udevadm control --reload-rules || true
fi

if [ "$load_at_boot" -eq 1 ]; then
  echo "$name" >"$boot_conf"
  log "wrote $boot_conf: fgds loads at boot"
elif [ -f "$boot_conf" ]; then
  log "$boot_conf exists from an earlier run; left as it is"
fi

if [ "$load" -eq 0 ]; then
  log "installed $name $version for $kver; not loaded (--no-load)"
  exit 0
fi
if [ "$kver" != "$running" ]; then
  log "installed $name $version for $kver; it loads once that kernel runs"
  exit 0
fi
if [ -d /sys/module/$name ]; then
  loaded=$(cat /sys/module/$name/version 2>/dev/null || echo unknown)
  log "unloading the running $name ($loaded)"
  modprobe -r "$name" || die "$name is in use; stop its users (fgds mount, GPU jobs) and re-run"
fi
if ! modprobe "$name"; then
  msg="modprobe $name failed; the kernel log says why:
$(dmesg 2>/dev/null | grep -iE 'fgds|module' | tail -n 5)"
  if command -v mokutil >/dev/null && mokutil --sb-state 2>/dev/null | grep enabled >/dev/null; then
    msg+="
  Secure Boot is on: enroll DKMS's signing key (mokutil --import /var/lib/dkms/mok.pub) and reboot."
  fi
  die "$msg"
fi
# Nodes created before the rule was loaded get it applied now.
if command -v udevadm >/dev/null && [ -d /run/udev ]; then
  udevadm trigger --action=add --subsystem-match="$name" || true
  udevadm settle || true
fi
log "loaded $name $(cat /sys/module/$name/version 2>/dev/null || echo "$version"); nodes: $(ls /dev/${name}_* 2>/dev/null | tr '\n' ' ')"
log "add users to group $group (usermod -aG $group USER), then run: fgds probe"
