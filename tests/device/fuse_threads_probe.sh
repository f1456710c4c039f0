#!/bin/bash
# tests/device/fuse_threads_probe.sh: serial create, rename and unlink
# through the mount with 1, 16 and 2 FUSE worker threads (`--threads`),
# twice each, on the device machine (docs/fgdsd.md, "Passthrough and
# metadata over both transports": whether fewer idle workers, so that the
# thread that just replied takes the next request, cut a serial client's
# time per request). Builds fgds against the carried libfuse when
# /tmp/fgds-pt (passthrough_bench.sh's build) is not there. Carry .deps
# and .deps-libfuse. Each backing directory in turn (FGDS_THR_BASES,
# default the disk's /var/tmp and tmpfs' /dev/shm), so that the backing
# is told apart from the threads: on the 2-vCPU development VM the one
# fast run of creates on ext4 was each time the loop's first (one
# worker), its second one-worker run as slow as the others, and on tmpfs
# 1, 2 and 16 workers measured the same. Not run on the device yet: the
# device time ran out.
set -u
source tests/device/deps.sh >/dev/null 2>&1
if [ ! -x /tmp/fgds-pt/tools/fgds ]; then
  FGDS_DEPS_CACHE=$PWD/.deps-libfuse bash deploy/install-libfuse.sh >/dev/null 2>&1
  mkdir -p "$DEPS/opt/fgds"; ln -sfn /opt/fgds/libfuse-3.18.3 "$DEPS/opt/fgds/libfuse-3.18.3"
  cmake -S . -B /tmp/fgds-pt -DCMAKE_BUILD_TYPE=Release -DFGDS_BUILD_TESTS=OFF "${FGDS_CMAKE_DEP_ARGS[@]}" >/dev/null 2>&1
  cmake --build /tmp/fgds-pt -j16 --target fgds >/dev/null 2>&1 || { echo build failed; exit 1; }
fi
F=/tmp/fgds-pt/tools/fgds
for base in ${FGDS_THR_BASES:-/var/tmp /dev/shm}; do
echo "# backing in $base ($(stat -f -c %T "$base"))"
for t in 1 16 2 1 16 2; do
D=$(mktemp -d "$base/thr.XXXX"); mkdir $D/m $D/d
$F mount --threads $t --data $D/d $D/m >/dev/null 2>&1
python3 - $D/m $t <<'EOF'
import os,sys,time
m, t = sys.argv[1:]
d=os.path.join(m,'a'); os.mkdir(d); n=10000
t0=time.time()
for i in range(n):
  os.close(os.open(os.path.join(d,'f%d'%i), os.O_CREAT|os.O_EXCL|os.O_WRONLY|os.O_CLOEXEC,0o644))
t1=time.time()
for i in range(n): os.rename(os.path.join(d,'f%d'%i), os.path.join(d,'g%d'%i))
t2=time.time()
for i in range(n): os.unlink(os.path.join(d,'g%d'%i))
t3=time.time()
print('threads %2s: create %4.0f us, rename %4.0f us, unlink %4.0f us' % (t, (t1-t0)/n*1e6, (t2-t1)/n*1e6, (t3-t2)/n*1e6))
EOF
$F umount $D/m; rm -rf $D
done
done
