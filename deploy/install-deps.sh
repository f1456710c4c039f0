#!/usr/bin/env bash
# Installs what FGDS builds and runs with, from Debian 12's packages.
# Idempotent: installs only what is missing, and skips apt-get update when
# nothing is. Then builds libfuse 3.18 from Debian's source package into a
# private prefix (install-libfuse.sh; nothing to do when it is there).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libfuse3-dev fuse3 liburing-dev libabsl-dev
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev   # sanitizer runtimes and libFuzzer
  clang-format
  kmod procps util-linux
  python3 python3-numpy python3-torch  # the fgds Python package's tests
  # The CephFS backend (libcephfs) and the one-node test cluster
  # (tests/ceph/start-cluster.sh: mon, mgr, OSDs, MDS, the ceph CLI;
  # uuidgen); ceph-fuse is the tests' independent view of the file system
  # (tests/lib/mounted_fs.h) and the bench's reference client
  # (tests/ceph/bench.sh). About 35 s and 230 MB on a fresh machine.
  libcephfs-dev ceph-mon ceph-mgr ceph-osd ceph-mds ceph-common ceph-fuse
  uuid-runtime
  # The agent protocol's key proofs (HMAC-SHA256, backend/remote/).
  libssl-dev
  # The agent's RDMA transport (backend/remote/rdma_*; optional at build
  # time, FGDS_RDMA) and the rxe provider the rdma lab copies into its
  # guest (tests/rdma/run-lab.sh).
  libibverbs-dev librdmacm-dev ibverbs-providers
  # Building libfuse 3.18 (install-libfuse.sh): the source package's tools,
  # its build system, and libnuma for its io_uring transport.
  curl xz-utils dpkg-dev meson ninja-build libnuma-dev
  # tests/run.sh's four builds of the tree reuse compilations across runs.
  ccache
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${missing[*]}; run as root (sudo $0)" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
"$(dirname "$0")/install-libfuse.sh"
