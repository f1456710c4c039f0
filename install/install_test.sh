#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR PYTHON: installs the build into a
# temporary prefix (cmake --install) and checks what an application sees:
#   1. each library exports exactly its header's functions (nm -D), with a
#      versioned soname;
#   2. a C program builds with pkg-config (as C and as C++) and with
#      find_package(fgds), and runs against the installed libraries;
#   3. the Python package imports from the installed tree with nothing but
#      PYTHONPATH, and loads the installed libraries.
set -euo pipefail
build=$1 source=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && ls -d lib*/pkgconfig | head -1 | xargs dirname)
fail() { echo "install_test: $*" >&2; exit 1; }

# 1. Exports: the functions the header declares (a return type at the
# start of the line; not the static inline ones, not names in comments),
# against the dynamic symbols the library defines.
declared() {
  grep -E '^[a-z][a-z_ *]*[ *]fgds_[a-z0-9_]+\(' "$1" | grep -v '^static' |
    grep -oE 'fgds_[a-z0-9_]+\(' | tr -d '(' | sort -u
}
exported() {
  nm -D --defined-only "$1" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
    sort -u
}
for pair in "fgds:fgds.h" "fgds_usrbio:usrbio.h"; do
  lib=${pair%%:*} header=${pair#*:}
  so=$prefix/$libdir/lib$lib.so.0
  [ -f "$so" ] || fail "lib$lib.so.0 is not installed"
  [ -f "$prefix/include/fgds/$header" ] || fail "fgds/$header not installed"
  soname=$(readelf -d "$so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$soname" = "lib$lib.so.0" ] || fail "lib$lib soname is '$soname'"
  if ! diff <(declared "$prefix/include/fgds/$header") <(exported "$so"); then
    fail "lib$lib.so.0 exports differ from fgds/$header (< header, > library)"
  fi
  nm -D --defined-only "$so" | grep -q ' _Z' &&
    fail "lib$lib.so.0 exports C++ symbols"
done
echo "install_test: exports match the headers"

# 2. A C program, built the two ways applications build.
cp "$source/install/consumer.c" "$work/"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
cc -Wall -Werror -o "$work/consumer_pc" "$work/consumer.c" \
  $(pkg-config --cflags --libs fgds fgds-usrbio)
LD_LIBRARY_PATH=$prefix/$libdir "$work/consumer_pc"
# The headers serve C++ programs too.
c++ -Wall -Werror -x c++ -o "$work/consumer_cxx" "$work/consumer.c" \
  $(pkg-config --cflags --libs fgds fgds-usrbio)
LD_LIBRARY_PATH=$prefix/$libdir "$work/consumer_cxx"

mkdir "$work/cmake_project"
cp "$source/install/consumer_cmake.txt" "$work/cmake_project/CMakeLists.txt"
cp "$source/install/consumer.c" "$work/cmake_project/"
cmake -S "$work/cmake_project" -B "$work/cmake_build" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake_build" >/dev/null
# CMake records the imported libraries' directory as the binary's RUNPATH.
"$work/cmake_build/consumer"

# 3. Python: only PYTHONPATH, no FGDS_LIBRARY_DIR.
env -u FGDS_LIBRARY_DIR PYTHONPATH="$prefix/$libdir/fgds/python" \
  PYTHONDONTWRITEBYTECODE=1 "$python" - "$prefix/$libdir" <<'PY'
import errno, os, sys
import fgds, fgds._library as library
assert fgds.__file__.startswith(sys.argv[1]), fgds.__file__
try:
    fgds.Session("/")
except OSError as error:
    assert error.errno == errno.ENOTSUP, error
handle = library.load("fgds_usrbio")
assert os.path.realpath(handle._name).startswith(sys.argv[1]), handle._name
print("install_test: python imports fgds from", os.path.dirname(fgds.__file__))
PY
echo "install_test: ok"
