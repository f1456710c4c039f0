#!/bin/bash
# tests/gpu/dropin_on_device.sh: the cuFile drop-in on the GPU machine, in
# one call from the repository root (carry .deps):
#
#   1. builds libcufile.so.0 (dropin/cufile), fgds and fgds-bench with the
#      carried Debian packages (tests/device/deps.sh);
#   2. checks that an unchanged torch.cuda.gds binds it under LD_PRELOAD
#      (torch's DT_RPATH puts NVIDIA's copy ahead of LD_LIBRARY_PATH,
#      ../shared/research/cufile-abi.md) and not NVIDIA's;
#   3. round-trips tensors of several dtypes and sizes through
#      torch.cuda.gds.GdsFile (save_storage, load_storage, buffer and handle
#      registration) and compares them bit for bit;
#   4. measures torch.cuda.gds load_storage through the drop-in against
#      libfgds called directly (fgds bench's libfgds mode, same block size,
#      one thread, one I/O in flight: what load_storage does), cold and
#      page-cached, and fgds bench's cufile mode (C through the drop-in);
#   5. prints a table and writes $OUT/dropin.json.
#
# Exit status: 0 when every tensor round-tripped bit-exactly, 1 otherwise
# (or when torch could not bind the drop-in). The speed rows are reported
# against the 0.9x target, not enforced.
#
# Knobs: FGDS_DROPIN_SIZE (bytes of the speed file, default 4 GiB),
# FGDS_DROPIN_CHUNK (bytes per load_storage, default 256 MiB),
# FGDS_PYTHON (a python with torch; else the first one found).
set -u -o pipefail

OUT=${OUT:-/tmp/fgds-dropin-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run.log") 2>&1
ROOT=$(pwd)
BUILD=/tmp/fgds-dropin-build
SIZE=${FGDS_DROPIN_SIZE:-$((4 << 30))}
CHUNK=${FGDS_DROPIN_CHUNK:-$((256 << 20))}
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

step "dependencies"
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }

step "configure and build (libcufile.so.0, fgds, fgds-bench)"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -40 "$BUILD/configure.log"; echo "configure failed"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target cufile fgds fgds-bench \
  cufile_nogpu_test >"$BUILD/build.log" 2>&1 ||
  { grep -E 'error' "$BUILD/build.log" | head -40; echo "build failed"; exit 1; }
LIB=$BUILD/dropin/cufile/libcufile.so.0
[ -f "$LIB" ] || { echo "no $LIB"; exit 1; }

PY=""
for p in ${FGDS_PYTHON:-} python3 python /opt/venv/bin/python3 \
  /root/venv/bin/python3 /venv/bin/python3 /opt/*/bin/python3; do
  command -v "$p" >/dev/null 2>&1 || continue
  if "$p" -c 'import torch, torch.cuda.gds' >/dev/null 2>&1; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "no python with torch.cuda.gds found (set FGDS_PYTHON)"; exit 1; }
echo "python: $PY ($("$PY" -c 'import torch; print(torch.__version__)'))"

DISK=$(odirect_dir /var/tmp /root /tmp "$ROOT")
DISK=${DISK:+$DISK/fgds-dropin-run}
mkdir -p "$DISK"
step "scratch on $DISK: $(df -T "$DISK" | tail -1 | awk '{print $1, $2, $5 " free"}')"

# The drop-in's own errors on a GPU host: the no-GPU program skips (77).
"$BUILD/dropin/cufile/cufile_nogpu_test"; echo "cufile_nogpu_test: exit $? (77 = skipped: a GPU is here)"

cat >"$OUT/dropin_torch.py" <<'PYEOF'
import json, os, sys, time
import torch

lib, disk, size, chunk, phase = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
result = {}

def bound_library():
    with open("/proc/self/maps") as f:
        return sorted({l.split()[-1] for l in f if "libcufile" in l})

if phase == "roundtrip":
    import torch.cuda.gds as gds
    torch.manual_seed(0)
    specs = [(torch.float32, (1024, 1024)), (torch.bfloat16, (3, 1000)),
             (torch.float16, (4096,)), (torch.int8, (12345,)),
             (torch.float64, (513, 7)), (torch.uint8, (64 << 20,)),
             (torch.int64, (1,)), (torch.bool, (4097,))]
    tensors = []
    for dtype, shape in specs:
        if dtype.is_floating_point:
            t = torch.randn(shape, device="cuda").to(dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, shape, device="cuda").bool()
        else:
            t = torch.randint(-100 if dtype.is_signed else 0, 100, shape,
                              device="cuda", dtype=dtype)
        tensors.append(t)
    path = os.path.join(disk, "roundtrip.bin")
    offsets, offset = [], 0
    for t in tensors:
        offsets.append(offset)
        offset += (t.untyped_storage().nbytes() + 4095) // 4096 * 4096
    f = gds.GdsFile(path, os.O_CREAT | os.O_RDWR)
    for i, (t, off) in enumerate(zip(tensors, offsets)):
        if i % 2 == 0:
            gds.gds_register_buffer(t.untyped_storage())
        f.save_storage(t.untyped_storage(), off)
        if i % 2 == 0:
            gds.gds_deregister_buffer(t.untyped_storage())
    del f
    f = gds.GdsFile(path, os.O_RDONLY)
    mismatches = []
    for i, (t, off) in enumerate(zip(tensors, offsets)):
        back = torch.empty_like(t)
        if i % 2 == 1:
            gds.gds_register_buffer(back.untyped_storage())
        f.load_storage(back.untyped_storage(), off)
        if i % 2 == 1:
            gds.gds_deregister_buffer(back.untyped_storage())
        same = torch.equal(t.view(-1).view(torch.uint8) if t.dtype != torch.bool else t,
                           back.view(-1).view(torch.uint8) if back.dtype != torch.bool else back)
        if not same:
            mismatches.append(str(t.dtype) + str(tuple(t.shape)))
    # register_handle / deregister_handle, then a read must still work.
    f.deregister_handle()
    f.register_handle()
    back = torch.empty_like(tensors[0])
    f.load_storage(back.untyped_storage(), offsets[0])
    if not torch.equal(back, tensors[0]):
        mismatches.append("after re-registering the handle")
    del f
    os.unlink(path)
    result = {"tensors": len(tensors), "mismatches": mismatches,
              "bound": bound_library()}
elif phase in ("cold", "warm"):
    import torch.cuda.gds as gds
    path = os.path.join(disk, "speed.bin")
    buf = torch.empty(chunk, dtype=torch.uint8, device="cuda")
    gds.gds_register_buffer(buf.untyped_storage())
    f = gds.GdsFile(path, os.O_RDONLY)
    runs = []
    for _ in range(1 if phase == "cold" else 3):
        if phase == "cold":
            os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
        torch.cuda.synchronize()
        start = time.perf_counter()
        for off in range(0, size, chunk):
            f.load_storage(buf.untyped_storage(), off)
        torch.cuda.synchronize()
        runs.append(size / (time.perf_counter() - start) / 1e9)
    gds.gds_deregister_buffer(buf.untyped_storage())
    result = {"gb_per_s": sorted(runs)[len(runs) // 2], "bound": bound_library()}
print("RESULT " + json.dumps(result))
PYEOF

run_py() {  # run_py PHASE -> the RESULT json on stdout
  LD_PRELOAD=$LIB timeout 600 "$PY" "$OUT/dropin_torch.py" "$LIB" "$DISK" \
    "$SIZE" "$CHUNK" "$1" 2>"$OUT/torch-$1.err" | grep '^RESULT ' | cut -c8-
}

step "torch.cuda.gds round trip through the drop-in (LD_PRELOAD=$LIB)"
ROUNDTRIP=$(run_py roundtrip)
echo "${ROUNDTRIP:-no result}"; [ -n "$ROUNDTRIP" ] || tail -20 "$OUT/torch-roundtrip.err"

step "speed file: $SIZE bytes"
head -c "$SIZE" /dev/urandom >"$DISK/speed.bin"
sync
step "torch.cuda.gds load_storage, cold and page-cached ($CHUNK bytes each)"
TORCH_COLD=$(run_py cold); echo "cold: ${TORCH_COLD:-no result}"
"$PY" - "$DISK/speed.bin" <<'PYEOF'
import sys
with open(sys.argv[1], "rb") as f:  # into the page cache
    while f.read(64 << 20):
        pass
PYEOF
TORCH_WARM=$(run_py warm); echo "warm: ${TORCH_WARM:-no result}"
rm -f "$DISK/speed.bin"

BENCH="$BUILD/tools/fgds bench --mount $DISK --backing $DISK --no-mount-check"
COMMON="--size $SIZE --bs $CHUNK --threads 1 --qd 1 --cache both"
step "libfgds directly (fgds bench --modes libfgds $COMMON)"
timeout 300 $BENCH $COMMON --modes libfgds --json "$OUT/bench-libfgds.json" 2>&1 |
  grep -vE '^(GB/s|p50|vs base|$)'
step "C through the drop-in (fgds bench --modes cufile, FGDS_CUFILE_LIB=$LIB)"
FGDS_CUFILE_LIB=$LIB timeout 300 $BENCH $COMMON --modes cufile \
  --json "$OUT/bench-cufile.json" 2>&1 | grep -vE '^(GB/s|p50|vs base|$)'

"$PY" - "$OUT" "$LIB" "$ROUNDTRIP" "$TORCH_COLD" "$TORCH_WARM" <<'PYEOF'
import json, os, sys
out, lib = sys.argv[1], sys.argv[2]
def parse(text):
    try:
        return json.loads(text)
    except Exception:
        return None
roundtrip, cold, warm = (parse(t) for t in sys.argv[3:6])
def bench(name, cache):
    try:
        with open(os.path.join(out, "bench-%s.json" % name)) as f:
            rows = json.load(f).get("rows", [])
    except Exception:
        return None
    for r in rows:
        if r["op"] == "read" and (r["cache_wanted"] == cache or r["cache"] == "direct"):
            return r["gb_per_s"]
    return None
ok = True
bound = (roundtrip or {}).get("bound", [])
binds = bound == [os.path.realpath(lib)] or bound == [lib]
if not binds:
    ok = False
mismatches = (roundtrip or {}).get("mismatches")
if roundtrip is None or mismatches:
    ok = False
rows = []
for cache, torch_row in (("cold", cold), ("warm", warm)):
    t = (torch_row or {}).get("gb_per_s")
    base = bench("libfgds", cache)
    c = bench("cufile", cache)
    ratio = t / base if t and base else None
    rows.append({"cache": cache, "torch_gds_dropin": t, "libfgds": base,
                 "cufile_c_dropin": c, "ratio": ratio,
                 "meets_0.9": None if ratio is None else ratio >= 0.9})
def f(x):
    return "-" if x is None else ("%.2f" % x if isinstance(x, float) else str(x))
print()
print("torch binds:       %s" % (", ".join(bound) or "nothing"), "(ok)" if binds else "(NOT the drop-in)")
print("round trip:        %s tensors, %s" % ((roundtrip or {}).get("tensors", "-"),
      "bit-exact" if roundtrip is not None and not mismatches else "MISMATCH %s" % mismatches))
print()
print("%-6s %18s %12s %16s %8s %8s" % ("cache", "torch.gds+dropin", "libfgds", "C cuFile+dropin", "ratio", ">=0.9"))
for r in rows:
    print("%-6s %18s %12s %16s %8s %8s" % (r["cache"], f(r["torch_gds_dropin"]), f(r["libfgds"]),
          f(r["cufile_c_dropin"]), f(r["ratio"]), f(r["meets_0.9"])))
print("(GB/s; ratio = torch.cuda.gds through the drop-in / libfgds directly)")
with open(os.path.join(out, "dropin.json"), "w") as fh:
    json.dump({"bound": bound, "roundtrip": roundtrip, "rows": rows, "ok": ok}, fh, indent=1)
sys.exit(0 if ok else 1)
PYEOF
STATUS=$?
rm -rf "$DISK"
echo "dropin_on_device.sh: exit $STATUS"
exit $STATUS
