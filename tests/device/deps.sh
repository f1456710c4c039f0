#!/bin/bash
# tests/device/deps.sh: sourced by the device-machine scripts. Defines
# odirect_dir (odirect_dir.sh), then unpacks the
# carried Debian packages (.deps/*.deb: abseil, liburing, libfuse3, fuse3,
# googletest, pkgconf) into a private prefix and points the compiler,
# linker, pkg-config and PATH into it. Never unpack into /: the device
# image is Ubuntu with a merged /usr, and Debian's /lib would replace its
# /lib symlink (../shared/LAB.md).
# Sets DEPS, PKG_CONFIG and FGDS_CMAKE_DEP_ARGS (for cmake's command line).
source "$(dirname "${BASH_SOURCE[0]}")/odirect_dir.sh"

DEPS=${DEPS:-/opt/fgds-deps}
rm -rf "$DEPS"
mkdir -p "$DEPS"
for deb in .deps/*.deb; do dpkg -x "$deb" "$DEPS" || return 1; done
# Absolute links (libfuse3.so -> /lib/...) must point into the prefix.
find "$DEPS" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in /*) ln -sfn "$DEPS$target" "$link" ;; esac
done
# A libfuse that deploy/install-libfuse.sh left in /opt/fgds (an earlier
# call on the same machine, e.g. passthrough_bench.sh) is the one CMake
# picks, and pkg-config prefixes its paths with $DEPS (the sysroot below):
# they must resolve there too, or CMake's generate step fails.
for lib in /opt/fgds/libfuse-*; do
  [ -d "$lib" ] || continue
  mkdir -p "$DEPS/opt/fgds"
  ln -sfn "$lib" "$DEPS$lib"
done
LIBDIRS=$DEPS/usr/lib/x86_64-linux-gnu:$DEPS/lib/x86_64-linux-gnu
export CPATH=$DEPS/usr/include:$DEPS/usr/include/x86_64-linux-gnu
export LIBRARY_PATH=$LIBDIRS
export LD_LIBRARY_PATH=$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_LIBDIR=$DEPS/usr/lib/x86_64-linux-gnu/pkgconfig:$DEPS/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$DEPS
# fusermount3 (setuid helper libfuse runs to mount and unmount).
export PATH=$DEPS/usr/bin:$DEPS/bin:$PATH
PKG_CONFIG=$(command -v pkg-config || echo "$DEPS/usr/bin/pkgconf")
# The device's g++ 13 may warn where Debian's g++ 12 does not: keep going
# (-Werror is CI's job). Abseil 20220623 predates g++ 13's leaner <string>,
# hence the forced <cstdint>.
printf '#!/bin/sh\nexec "$@" -Wno-error\n' >/tmp/fgds-no-werror
chmod +x /tmp/fgds-no-werror
FGDS_CMAKE_DEP_ARGS=(-DCMAKE_PREFIX_PATH="$DEPS/usr" -DCMAKE_POLICY_VERSION_MINIMUM=3.5
  -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG" -DCMAKE_CXX_FLAGS="-include cstdint"
  -DCMAKE_CXX_COMPILER_LAUNCHER=/tmp/fgds-no-werror
  -DCMAKE_C_COMPILER_LAUNCHER=/tmp/fgds-no-werror)
