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
#      registration) and compares them bit for bit; runs the batch and
#      stream calls on torch tensors (ctypes on the drop-in); runs 3FS's
#      GDR calls (libhf3fs_api_shared.so: iovwrap_device on a tensor,
#      iovcreate_device, read and write rings) on an fgds mount;
#   4. measures torch.cuda.gds load_storage through the drop-in against
#      libfgds called directly (fgds bench's libfgds mode, same block size,
#      one thread, one I/O in flight: what load_storage does), cold and
#      page-cached, and fgds bench's cufile mode (C through the drop-in);
#   5. prints a table and writes $OUT/dropin.json.
#
# Exit status: 0 when every tensor round-tripped bit-exactly and the batch,
# stream and hf3fs GPU checks passed, 1 otherwise (or when torch could not
# bind the drop-in). The speed rows are reported
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
SIZE=$((SIZE / CHUNK * CHUNK))  # whole chunks: load_storage raises on a short read
SECONDS=0
step() { echo "=== [${SECONDS}s] $*"; }

step "dependencies"
source tests/device/deps.sh || { echo "dependencies failed"; exit 1; }

step "configure and build (libcufile.so.0, fgds, fgds-bench)"
# A build directory left by a run from another checkout (a warm machine
# keeps /tmp) is for another source tree: CMake refuses it.
if [ -f "$BUILD/CMakeCache.txt" ] &&
  ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${FGDS_CMAKE_DEP_ARGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -40 "$BUILD/configure.log"; echo "configure failed"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target cufile hf3fs_api_shared fgds \
  fgds-bench fgds_shared cufile_nogpu_test >"$BUILD/build.log" 2>&1 ||
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
    # torch registered the handle: if that reached the drop-in, its driver
    # is open (torch never opens it explicitly). This, not what is mapped,
    # proves the binding: torch may map NVIDIA's copy beside ours.
    import ctypes
    use_count = ctypes.CDLL(lib).cuFileUseCount()
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
    # Which cuFile calls torch makes (load_storage: cuFileRead, or
    # cuFileReadAsync + a stream sync in newer releases).
    import glob, subprocess
    imports = []
    for so in glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda*.so")):
        try:
            out = subprocess.run(["nm", "-D", "--undefined-only", so], capture_output=True,
                                 text=True).stdout
            imports += sorted({l.split()[-1] for l in out.splitlines() if "cuFile" in l})
        except OSError:
            pass
    result = {"tensors": len(tensors), "mismatches": mismatches,
              "bound": bound_library(), "drop_in_use_count": use_count,
              "torch_cufile_imports": imports}
elif phase in ("cold", "warm"):
    # Three readers of the same file into the same registered buffer, in
    # this one process, rounds interleaved so that none gets a kinder page
    # cache or CPU: torch.cuda.gds load_storage (through the drop-in),
    # cuFileRead on the drop-in called through ctypes (the drop-in without
    # torch), and libfgds called directly (libfgds.so, fgds_pread, as fgds
    # bench's libfgds mode does it). Each reads the whole file in `chunk`
    # pieces, one at a time.
    import ctypes
    import torch.cuda.gds as gds
    path = os.path.join(disk, "speed.bin")
    buf = torch.empty(chunk, dtype=torch.uint8, device="cuda")
    gds.gds_register_buffer(buf.untyped_storage())
    f = gds.GdsFile(path, os.O_RDONLY)
    cf = ctypes.CDLL(lib)
    cf.cuFileRead.restype = ctypes.c_ssize_t
    cf.cuFileRead.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                              ctypes.c_int64, ctypes.c_int64]
    class DriverParams(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint32), ("device", ctypes.c_int32),
                    ("workers", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                    ("chunk_bytes", ctypes.c_uint64), ("staging_bytes", ctypes.c_uint64),
                    ("reserved", ctypes.c_uint64 * 4)]
    fg = ctypes.CDLL(os.environ["FGDS_LIBFGDS"])
    fg.fgds_pread.restype = ctypes.c_ssize_t
    fg.fgds_pread.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                              ctypes.c_size_t, ctypes.c_int64, ctypes.c_int64]
    drv = ctypes.c_void_p()
    params = DriverParams(flags=1, device=torch.cuda.current_device())
    if fg.fgds_driver_open(ctypes.byref(drv), ctypes.byref(params)) != 0:
        raise SystemExit("fgds_driver_open failed")
    plain_fd = os.open(path, os.O_RDONLY)
    fg.fgds_file_register(drv, plain_fd)
    fg.fgds_buf_register(drv, ctypes.c_void_p(buf.data_ptr()), ctypes.c_size_t(chunk), 0)
    ptr = ctypes.c_void_p(buf.data_ptr())
    def torch_read(off):
        f.load_storage(buf.untyped_storage(), off)
    def cufile_read(off):
        n = cf.cuFileRead(ctypes.c_void_p(f.handle), ptr, chunk, off, 0)
        if n != chunk:
            raise SystemExit("cuFileRead %d" % n)
    def libfgds_read(off):
        n = fg.fgds_pread(drv, plain_fd, ptr, chunk, off, 0)
        if n != chunk:
            raise SystemExit("fgds_pread %d" % n)
    readers = {"torch": torch_read, "cufile": cufile_read, "libfgds": libfgds_read}
    runs = {name: [] for name in readers}
    calls = {name: [] for name in readers}  # seconds per call
    for _ in range(1 if phase == "cold" else 3):
        for name, read in readers.items():
            if phase == "cold":
                os.system("sync; echo 3 > /proc/sys/vm/drop_caches")
            torch.cuda.synchronize()
            start = time.perf_counter()
            for off in range(0, size, chunk):
                t0 = time.perf_counter()
                read(off)
                calls[name].append(time.perf_counter() - t0)
            torch.cuda.synchronize()
            runs[name].append(size / (time.perf_counter() - start) / 1e9)
    fg.fgds_buf_deregister(drv, ptr)
    fg.fgds_file_deregister(drv, plain_fd)
    fg.fgds_driver_close(drv)
    os.close(plain_fd)
    gds.gds_deregister_buffer(buf.untyped_storage())
    def median(xs):
        return sorted(xs)[len(xs) // 2]
    result = {"gb_per_s": median(runs["torch"]),
              "cufile_ctypes_gb_per_s": median(runs["cufile"]),
              "libfgds_same_process_gb_per_s": median(runs["libfgds"]),
              "runs": runs,
              "median_call_ms": {k: 1e3 * median(v) for k, v in calls.items()},
              "bound": bound_library()}
elif phase == "batch_stream":
    # The batch and stream calls (kvikio's raw paths), through ctypes on
    # the preloaded drop-in, into torch tensors on the real GPU.
    import ctypes
    cf = ctypes.CDLL(lib)
    class Err(ctypes.Structure):
        _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]
    class Descr(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("fd", ctypes.c_int64),
                    ("fs_ops", ctypes.c_void_p)]
    class Params(ctypes.Structure):
        _fields_ = [("mode", ctypes.c_int), ("base", ctypes.c_void_p),
                    ("file_offset", ctypes.c_int64), ("buf_offset", ctypes.c_int64),
                    ("size", ctypes.c_size_t), ("fh", ctypes.c_void_p),
                    ("opcode", ctypes.c_int), ("cookie", ctypes.c_void_p)]
    class Event(ctypes.Structure):
        _fields_ = [("cookie", ctypes.c_void_p), ("status", ctypes.c_int),
                    ("ret", ctypes.c_size_t)]
    assert ctypes.sizeof(Params) == 64 and ctypes.sizeof(Event) == 24
    for name in ("cuFileHandleRegister", "cuFileBatchIOSetUp", "cuFileBatchIOSubmit",
                 "cuFileBatchIOGetStatus", "cuFileReadAsync", "cuFileWriteAsync",
                 "cuFileStreamRegister", "cuFileStreamDeregister"):
        getattr(cf, name).restype = Err
    torch.manual_seed(1)
    mib = 1 << 20
    src = torch.randint(0, 256, (16 * mib,), dtype=torch.uint8, device="cuda")
    path = os.path.join(disk, "batch.bin")
    with open(path, "wb") as fh:
        fh.write(src.cpu().numpy().tobytes())
    fd = os.open(path, os.O_RDWR)
    descr = Descr(1, fd, None)
    handle = ctypes.c_void_p()
    errors = []
    e = cf.cuFileHandleRegister(ctypes.byref(handle), ctypes.byref(descr))
    if e.err:
        errors.append("cuFileHandleRegister %d" % e.err)
    dst = torch.zeros_like(src)
    batch = ctypes.c_void_p()
    e = cf.cuFileBatchIOSetUp(ctypes.byref(batch), 16)
    if e.err:
        errors.append("cuFileBatchIOSetUp %d" % e.err)
    params = (Params * 16)()
    for i in range(16):  # pieces in reverse order, one MiB each
        params[i] = Params(1, dst.data_ptr(), (15 - i) * mib, i * mib, mib,
                           handle, 0, i + 1)
    e = cf.cuFileBatchIOSubmit(batch, 16, params, 0)
    if e.err:
        errors.append("cuFileBatchIOSubmit %d" % e.err)
    got, events = 0, (Event * 16)()
    while got < 16 and not errors:
        nr = ctypes.c_uint(16)
        e = cf.cuFileBatchIOGetStatus(batch, 1, ctypes.byref(nr), events, None)
        if e.err:
            errors.append("cuFileBatchIOGetStatus %d" % e.err)
        for k in range(nr.value):
            if events[k].status != 0x10 or events[k].ret != mib:
                errors.append("event %d: status %d ret %d" % (events[k].cookie or 0,
                              events[k].status, events[k].ret))
        got += nr.value
    cf.cuFileBatchIODestroy(batch)
    expect = src.view(16, mib).flip(0).reshape(-1)
    if not torch.equal(dst, expect):
        errors.append("batch data mismatch")
    # Stream: a kernel writes the source on the stream, the write follows it.
    stream = torch.cuda.Stream()
    sp = ctypes.c_void_p(stream.cuda_stream)
    e = cf.cuFileStreamRegister(sp, 15)
    if e.err:
        errors.append("cuFileStreamRegister %d" % e.err)
    with torch.cuda.stream(stream):
        data = torch.full((4 * mib,), 7, dtype=torch.uint8, device="cuda")
        data.add_(src[:4 * mib])
    size, foff, boff, done = (ctypes.c_size_t(4 * mib), ctypes.c_int64(0),
                              ctypes.c_int64(0), ctypes.c_ssize_t(0))
    e = cf.cuFileWriteAsync(handle, ctypes.c_void_p(data.data_ptr()), ctypes.byref(size),
                            ctypes.byref(foff), ctypes.byref(boff), ctypes.byref(done), sp)
    back = torch.zeros_like(data)
    done2 = ctypes.c_ssize_t(0)
    e2 = cf.cuFileReadAsync(handle, ctypes.c_void_p(back.data_ptr()), ctypes.byref(size),
                            ctypes.byref(foff), ctypes.byref(boff), ctypes.byref(done2), sp)
    stream.synchronize()
    if e.err or e2.err or done.value != 4 * mib or done2.value != 4 * mib:
        errors.append("stream calls: %d %d %d %d" % (e.err, e2.err, done.value, done2.value))
    if not torch.equal(back, data):
        errors.append("stream data mismatch")
    cf.cuFileStreamDeregister(sp)
    cf.cuFileHandleDeregister(handle)
    os.close(fd)
    os.unlink(path)
    result = {"errors": errors}
elif phase == "hf3fs_gpu":
    # 3FS's GDR calls on a real GPU through libhf3fs_api_shared.so, on an
    # fgds mount (`disk` is the mount here, `lib` the hf3fs library).
    import ctypes
    h = ctypes.CDLL(lib)
    class Iov(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("iovh", ctypes.c_void_p),
                    ("id", ctypes.c_char * 16), ("mount_point", ctypes.c_char * 256),
                    ("size", ctypes.c_size_t), ("block_size", ctypes.c_size_t),
                    ("numa", ctypes.c_int)]
    class Ior(ctypes.Structure):
        _fields_ = [("iov", Iov), ("iorh", ctypes.c_void_p),
                    ("mount_point", ctypes.c_char * 256), ("for_read", ctypes.c_bool),
                    ("io_depth", ctypes.c_int), ("priority", ctypes.c_int),
                    ("timeout", ctypes.c_int), ("flags", ctypes.c_uint64)]
    class Cqe(ctypes.Structure):
        _fields_ = [("index", ctypes.c_int32), ("reserved", ctypes.c_int32),
                    ("result", ctypes.c_int64), ("userdata", ctypes.c_void_p)]
    h.hf3fs_gdr_available.restype = ctypes.c_bool
    errors = []
    mnt = disk.encode()
    mib = 1 << 20
    torch.manual_seed(2)
    src = torch.randint(0, 256, (32 * mib,), dtype=torch.uint8)
    path = os.path.join(disk, "hf3fs-gpu.bin")
    with open(path, "wb") as fh:
        fh.write(src.numpy().tobytes())
    if not h.hf3fs_gdr_available():
        errors.append("hf3fs_gdr_available() is false on a GPU host")
    fd = os.open(path, os.O_RDONLY)
    if h.hf3fs_reg_fd(fd, ctypes.c_uint64(0)) > 0:
        errors.append("hf3fs_reg_fd failed")
    ior = Ior()
    r = h.hf3fs_iorcreate4(ctypes.byref(ior), mnt, 16, True, 0, 0, -1, ctypes.c_uint64(0))
    if r:
        errors.append("hf3fs_iorcreate4 %d" % r)
    # The wrapped tensor is a slice of a larger allocation, starting 4 MiB +
    # 512 bytes in (a tensor of PyTorch's caching allocator seldom starts
    # its block); the rest of the block is a guard no read may touch.
    block = torch.full((40 * mib,), 0xA5, dtype=torch.uint8, device="cuda")
    dst = block[4 * mib + 512:4 * mib + 512 + 32 * mib]
    wrapped, created = Iov(), Iov()
    r1 = h.hf3fs_iovwrap_device(ctypes.byref(wrapped), ctypes.c_void_p(dst.data_ptr()),
                                None, mnt, ctypes.c_size_t(32 * mib), ctypes.c_size_t(0), 0)
    r2 = h.hf3fs_iovcreate_device(ctypes.byref(created), mnt, ctypes.c_size_t(8 * mib),
                                  ctypes.c_size_t(0), 0)
    if r1 or r2:
        errors.append("iovwrap_device %d, iovcreate_device %d" % (r1, r2))
    else:
        if h.hf3fs_iov_mem_type(ctypes.byref(wrapped)) != 1:
            errors.append("hf3fs_iov_mem_type is not DEVICE")
        # 3FS's order: the application's GPU writes to the buffer (the fill
        # above, queued on torch's stream) finish before the I/O.
        if h.hf3fs_iovsync(ctypes.byref(wrapped), 0) != 0:
            errors.append("hf3fs_iovsync")
        # 4 MiB pieces; the last as a 123-byte head and the rest, which
        # starts at an odd offset in the file and in memory.
        pieces = [(i * 4 * mib, 4 * mib) for i in range(7)]
        pieces += [(28 * mib, 123), (28 * mib + 123, 4 * mib - 123)]
        for off, n in pieces:
            r = h.hf3fs_prep_io(ctypes.byref(ior), ctypes.byref(wrapped), True,
                                ctypes.c_void_p(dst.data_ptr() + off), fd,
                                ctypes.c_size_t(off), ctypes.c_uint64(n), None)
            if r < 0:
                errors.append("prep_io %d" % r)
        r = h.hf3fs_prep_io(ctypes.byref(ior), ctypes.byref(created), True,
                            ctypes.c_void_p(created.base), fd, ctypes.c_size_t(mib),
                            ctypes.c_uint64(8 * mib), None)
        if r < 0:
            errors.append("prep_io (created) %d" % r)
        h.hf3fs_submit_ios(ctypes.byref(ior))
        cqes, got = (Cqe * 16)(), 0
        while got < len(pieces) + 1 and not errors:
            n = h.hf3fs_wait_for_ios(ctypes.byref(ior), cqes, 16, 1, None)
            if n <= 0:
                errors.append("wait_for_ios %d" % n)
                break
            for k in range(n):
                if cqes[k].result < 0:
                    errors.append("cqe result %d" % cqes[k].result)
            got += n
        if h.hf3fs_iovsync(ctypes.byref(wrapped), 1) != 0:
            errors.append("hf3fs_iovsync")
        host = block.cpu()
        got_bytes = host[4 * mib + 512:4 * mib + 512 + 32 * mib]
        bad = (got_bytes != src).nonzero()
        if bad.numel():
            errors.append("GPU iov data mismatch (wrapped tensor): %d bytes, first at %d, "
                          "last at %d" % (bad.numel(), bad[0].item(), bad[-1].item()))
        if not (bool((host[:4 * mib + 512] == 0xA5).all()) and
                bool((host[4 * mib + 512 + 32 * mib:] == 0xA5).all())):
            errors.append("a read wrote outside the wrapped slice")
        # hf3fs_iovsync is a device-wide fence (3FS: cudaDeviceSynchronize):
        # a kernel on another stream writes the slice, then the slice goes
        # to a file. Without the fence the library's copy (on a stream of
        # its own) reads the slice before the kernel wrote it.
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU cycles
            dst[:4 * mib].fill_(0x5A)
        if h.hf3fs_iovsync(ctypes.byref(wrapped), 0) != 0 or not side.query():
            errors.append("hf3fs_iovsync returned before the device's work finished")
        fence_path = os.path.join(disk, "hf3fs-gpu-fence.bin")
        fence_fd = os.open(fence_path, os.O_RDWR | os.O_CREAT, 0o644)
        fior = Ior()
        if (h.hf3fs_iorcreate4(ctypes.byref(fior), mnt, 4, False, 0, 0, -1,
                               ctypes.c_uint64(0)) or
                h.hf3fs_reg_fd(fence_fd, ctypes.c_uint64(0)) > 0):
            errors.append("fence write ring / reg_fd")
        else:
            r = h.hf3fs_prep_io(ctypes.byref(fior), ctypes.byref(wrapped), False,
                                ctypes.c_void_p(dst.data_ptr()), fence_fd,
                                ctypes.c_size_t(0), ctypes.c_uint64(4 * mib), None)
            h.hf3fs_submit_ios(ctypes.byref(fior))
            n = h.hf3fs_wait_for_ios(ctypes.byref(fior), cqes, 1, 1, None)
            if r < 0 or n != 1 or cqes[0].result != 4 * mib:
                errors.append("fence write: prep %d wait %d" % (r, n))
            with open(fence_path, "rb") as fh:
                if fh.read() != b"\x5a" * (4 * mib):
                    errors.append("GPU iov write after hf3fs_iovsync missed the kernel's bytes")
            h.hf3fs_dereg_fd(fence_fd)
            h.hf3fs_iordestroy(ctypes.byref(fior))
        os.close(fence_fd)
        os.unlink(fence_path)
        # The created iov's bytes: written back to a file from GPU memory
        # through a write ring, then compared on the host.
        out_path = os.path.join(disk, "hf3fs-gpu-out.bin")
        out_fd = os.open(out_path, os.O_RDWR | os.O_CREAT, 0o644)
        wior = Ior()
        r = h.hf3fs_iorcreate4(ctypes.byref(wior), mnt, 4, False, 0, 0, -1,
                               ctypes.c_uint64(0))
        if r or h.hf3fs_reg_fd(out_fd, ctypes.c_uint64(0)) > 0:
            errors.append("write ring %d / reg_fd" % r)
        else:
            r = h.hf3fs_prep_io(ctypes.byref(wior), ctypes.byref(created), False,
                                ctypes.c_void_p(created.base), out_fd,
                                ctypes.c_size_t(0), ctypes.c_uint64(8 * mib), None)
            h.hf3fs_submit_ios(ctypes.byref(wior))
            n = h.hf3fs_wait_for_ios(ctypes.byref(wior), cqes, 1, 1, None)
            if r < 0 or n != 1 or cqes[0].result != 8 * mib:
                errors.append("GPU iov write: prep %d wait %d result %d" %
                              (r, n, cqes[0].result if n == 1 else 0))
            with open(out_path, "rb") as fh:
                written = fh.read()
            if written != src[mib:9 * mib].numpy().tobytes():
                errors.append("GPU iov data mismatch (created iov, written back)")
            h.hf3fs_dereg_fd(out_fd)
            h.hf3fs_iordestroy(ctypes.byref(wior))
        os.close(out_fd)
        os.unlink(out_path)
        h.hf3fs_iovdestroy(ctypes.byref(created))
        h.hf3fs_iovdestroy(ctypes.byref(wrapped))
    h.hf3fs_iordestroy(ctypes.byref(ior))
    h.hf3fs_dereg_fd(fd)
    os.close(fd)
    os.unlink(path)
    result = {"errors": errors}
print("RESULT " + json.dumps(result))
PYEOF

run_py() {  # run_py PHASE -> the RESULT json on stdout
  FGDS_LIBFGDS=$BUILD/install/libfgds.so.0 LD_PRELOAD=$LIB timeout 600 "$PY" "$OUT/dropin_torch.py" "$LIB" "$DISK" \
    "$SIZE" "$CHUNK" "$1" 2>"$OUT/torch-$1.err" | grep '^RESULT ' | cut -c8-
}

step "torch.cuda.gds round trip through the drop-in (LD_PRELOAD=$LIB)"
ROUNDTRIP=$(run_py roundtrip)
echo "${ROUNDTRIP:-no result}"; [ -n "$ROUNDTRIP" ] || tail -20 "$OUT/torch-roundtrip.err"

step "cuFile batch and stream calls on the GPU (ctypes on the drop-in)"
BATCH=$(run_py batch_stream)
echo "${BATCH:-no result}"; [ -n "$BATCH" ] || tail -20 "$OUT/torch-batch_stream.err"

step "3FS GDR calls on the GPU (libhf3fs_api_shared.so on an fgds mount)"
HLIB=$BUILD/dropin/hf3fs/libhf3fs_api_shared.so
UMNT=$DISK/mnt
UBACK=$DISK/backing
mkdir -p "$UMNT" "$UBACK"
"$BUILD/tools/fgds" mount -f --data "$UBACK" "$UMNT" >"$OUT/daemon.log" 2>&1 &
UPID=$!
for _ in $(seq 100); do
  grep -q " $UMNT fuse" /proc/mounts && break
  sleep 0.1
done
HF3FS=""
if grep -q " $UMNT fuse" /proc/mounts; then
  HF3FS=$(timeout 300 "$PY" "$OUT/dropin_torch.py" "$HLIB" "$UMNT" "$SIZE" \
    "$CHUNK" hf3fs_gpu 2>"$OUT/torch-hf3fs_gpu.err" | grep '^RESULT ' | cut -c8-)
  echo "${HF3FS:-no result}"; [ -n "$HF3FS" ] || tail -20 "$OUT/torch-hf3fs_gpu.err"
  "$BUILD/tools/fgds" umount "$UMNT" || umount -l "$UMNT"
else
  echo "the mount did not come up"; tail -20 "$OUT/daemon.log"
fi
kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null

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

"$PY" - "$OUT" "$LIB" "$ROUNDTRIP" "$TORCH_COLD" "$TORCH_WARM" "$BATCH" "$HF3FS" <<'PYEOF'
import json, os, sys
out, lib = sys.argv[1], sys.argv[2]
def parse(text):
    try:
        return json.loads(text)
    except Exception:
        return None
roundtrip, cold, warm, batch, hf3fs = (parse(t) for t in sys.argv[3:8])
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
binds = (roundtrip or {}).get("drop_in_use_count", 0) > 0
if not binds:
    ok = False
mismatches = (roundtrip or {}).get("mismatches")
if roundtrip is None or mismatches:
    ok = False
extra = {}
for name, found in (("cuFile batch + stream", batch), ("hf3fs GPU iovs", hf3fs)):
    errors = None if found is None else found.get("errors")
    extra[name] = "no result" if errors is None else ("ok" if not errors else "; ".join(errors))
    if errors is None or errors:
        ok = False
rows = []
for cache, torch_row in (("cold", cold), ("warm", warm)):
    row = torch_row or {}
    t = row.get("gb_per_s")
    same = row.get("libfgds_same_process_gb_per_s")
    base = bench("libfgds", cache)
    ratio = t / same if t and same else None
    rows.append({"cache": cache, "torch_gds_dropin": t,
                 "cufile_ctypes_dropin": row.get("cufile_ctypes_gb_per_s"),
                 "libfgds_same_process": same, "libfgds_bench": base,
                 "cufile_c_dropin_bench": bench("cufile", cache),
                 "median_call_ms": row.get("median_call_ms"),
                 "ratio": ratio,
                 "ratio_vs_bench": t / base if t and base else None,
                 "meets_0.9": None if ratio is None else ratio >= 0.9})
def f(x):
    return "-" if x is None else ("%.2f" % x if isinstance(x, float) else str(x))
print()
print("torch binds:       %s" % ("the drop-in" if binds else "NOT the drop-in"),
      "(mapped: %s)" % (", ".join(bound) or "nothing"))
print("round trip:        %s tensors, %s" % ((roundtrip or {}).get("tensors", "-"),
      "bit-exact" if roundtrip is not None and not mismatches else "MISMATCH %s" % mismatches))
for name, verdict in extra.items():
    print("%-18s %s" % (name + ":", verdict))
print()
head = ("cache", "torch.gds", "cuFileRead", "libfgds", "libfgds", "C cuFile", "ratio", "ratio", ">=0.9")
sub = ("", "+dropin", "+dropin", "same proc", "bench", "bench", "same proc", "bench", "")
fmt = "%-6s %10s %10s %10s %9s %9s %10s %7s %6s"
print(fmt % head)
print(fmt % sub)
for r in rows:
    print(fmt % (r["cache"], f(r["torch_gds_dropin"]), f(r["cufile_ctypes_dropin"]),
                 f(r["libfgds_same_process"]), f(r["libfgds_bench"]),
                 f(r["cufile_c_dropin_bench"]), f(r["ratio"]), f(r["ratio_vs_bench"]),
                 f(r["meets_0.9"])))
print("(GB/s. torch.gds: load_storage through the drop-in; cuFileRead: the drop-in")
print(" called through ctypes; libfgds same proc: fgds_pread from the same process,")
print(" same file, page cache and buffer, rounds interleaved; bench: fgds bench in a")
print(" process of its own. ratio = torch.gds / libfgds; >=0.9 judges the same-process")
print(" ratio)")
for r in rows:
    if r["median_call_ms"]:
        print("%s: median ms per call: %s" % (r["cache"], json.dumps(
            {k: round(v, 2) for k, v in r["median_call_ms"].items()})))
with open(os.path.join(out, "dropin.json"), "w") as fh:
    json.dump({"bound": bound, "roundtrip": roundtrip, "extra": extra, "rows": rows, "ok": ok}, fh, indent=1)
sys.exit(0 if ok else 1)
PYEOF
STATUS=$?
rm -rf "$DISK"
echo "dropin_on_device.sh: exit $STATUS"
exit $STATUS
