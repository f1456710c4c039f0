"""The GPU half of the Python tests (issue 15, deliverables 6 and 7), run
by python_on_device.sh on the GPU machine with its python3 (torch, CuPy,
safetensors):

  correctness (any mismatch makes the exit status 1)
    - fgds.torch.load_file vs safetensors.torch.load_file, device="cuda",
      on files written by safetensors (every dtype it writes) and by
      fgds.torch.save_file: every tensor bit-equal
    - fgds.torch.GdsFile round trip on CUDA storages
    - CuPy arrays through fgds.Driver and through a usrbio GPU iov
    - usrbio GPU iovs from Python (torch tensors) on a real mount
  speed (reported against the issue's targets; never fails the run)
    - an 8 GiB safetensors file of many tensors, cold (caches dropped)
      and page-cached: fgds.torch.load_file vs a raw O_DIRECT read of the
      same file vs safetensors.torch.load_file(device="cuda")
    - Python IOPS of 4 KiB usrbio reads from one thread

Usage: python3 python_device_check.py --dir DISK_DIR --mount FGDS_MOUNT
"""

import argparse
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch

import fgds
import fgds.torch

failures = []
rows = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def bit_equal(a, b):
    if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.reshape(-1).view(torch.uint8),
                       b.reshape(-1).view(torch.uint8))


def every_dtype_tensors():
    from fgds import safetensors as format_
    from fgds.torch import dtypes
    result = {}
    for name in format_.DTYPE_BITS:
        try:
            dtype = dtypes.to_torch(name)
        except ValueError:
            continue
        shape = dtypes.torch_shape(name, [33, 64])
        raw = torch.randint(0, 256, (shape[0],
                                     shape[1] * dtypes.element_bytes(name)),
                            dtype=torch.uint8, device="cuda")
        result[f"t_{name}"] = (raw[:, :shape[1]] % 2 == 1) if \
            dtype == torch.bool else raw.view(dtype)
    result["scalar"] = torch.tensor(1.5, device="cuda")
    result["empty"] = torch.empty(0, 3, device="cuda")
    return result


# ---- correctness -----------------------------------------------------------

def check_against_safetensors(directory):
    import safetensors.torch as reference
    tensors = every_dtype_tensors()
    # The reference writer refuses dtypes it does not know: leave those out
    # of its file, and say which.
    written = {}
    for name, tensor in tensors.items():
        try:
            reference.save({name: tensor.cpu()})
            written[name] = tensor
        except Exception as error:  # noqa: BLE001 - reported, not hidden
            print(f"     safetensors cannot write {name} ({tensor.dtype}): "
                  f"{error}")
    path = os.path.join(directory, "reference.safetensors")
    reference.save_file({n: t.cpu() for n, t in written.items()}, path)
    ours = fgds.torch.load_file(path, device="cuda")
    theirs = reference.load_file(path, device="cuda")
    kinds = sorted(n[2:] for n in written if n.startswith("t_"))
    check(set(ours) == set(theirs) and all(
        bit_equal(ours[n], theirs[n]) for n in theirs),
        f"load_file == safetensors on safetensors' file "
        f"({len(theirs)} tensors, dtypes {kinds})")
    path = os.path.join(directory, "ours.safetensors")
    fgds.torch.save_file(written, path, metadata={"by": "fgds"})
    theirs = reference.load_file(path, device="cuda")
    ours = fgds.torch.load_file(path, device="cuda:0")
    check(all(bit_equal(theirs[n], t) and bit_equal(ours[n], t)
              for n, t in written.items()),
          "save_file's file loads bit-equal in safetensors and fgds")
    for p in ("reference.safetensors", "ours.safetensors"):
        os.unlink(os.path.join(directory, p))


def check_gds_file(directory):
    path = os.path.join(directory, "gds.bin")
    src1 = torch.randn(1024, device="cuda")
    src2 = torch.randn(2, 1024, device="cuda")
    f = fgds.torch.GdsFile(path, os.O_CREAT | os.O_RDWR)
    f.save_storage(src1.untyped_storage(), offset=0)
    f.save_storage(src2.untyped_storage(), offset=src1.nbytes)
    dest1 = torch.empty(1024, device="cuda")
    dest2 = torch.empty(2, 1024, device="cuda")
    fgds.torch.gds_register_buffer(dest2.untyped_storage())
    f.load_storage(dest1.untyped_storage(), offset=0)
    f.load_storage(dest2.untyped_storage(), offset=src1.nbytes)
    fgds.torch.gds_deregister_buffer(dest2.untyped_storage())
    check(torch.equal(src1, dest1) and torch.equal(src2, dest2),
          "GdsFile save_storage/load_storage round trip on CUDA")
    del f
    os.unlink(path)


def check_cupy(directory, mountpoint):
    try:
        import cupy
    except ImportError:
        check(False, "CuPy is importable")
        return
    data = os.urandom(3 << 20)
    path = os.path.join(directory, "cupy.bin")
    with open(path, "wb") as out:
        out.write(data)
    array = cupy.empty(len(data), dtype=cupy.uint8)
    driver = fgds.Driver(device=0)
    fd = os.open(path, os.O_RDWR)
    n = driver.pread(fd, array)
    check(n == len(data) and bytes(array.get()) == data,
          "fgds.Driver.pread into a CuPy array")
    doubled = cupy.asarray(array, dtype=cupy.uint16) * 2
    cupy.cuda.runtime.deviceSynchronize()
    driver.pwrite(fd, doubled, file_offset=0)
    back = cupy.empty_like(doubled)
    future = driver.read_async(fd, back)
    check(future.result() == doubled.nbytes and bool((back == doubled).all()),
          "fgds.Driver.pwrite/read_async with CuPy arrays (futures)")
    os.close(fd)
    os.unlink(path)
    # A usrbio GPU iov over a CuPy array.
    backing = os.path.join(mountpoint, "cupy-usrbio.bin")
    with open(backing, "wb") as out:
        out.write(data)
    with fgds.Session(mountpoint) as session:
        target = cupy.zeros(len(data), dtype=cupy.uint8)
        iov = session.wrap_gpu(target)
        ior = session.create_ior()
        f = session.open(backing)
        ior.prep_read(iov, 0, f, 0, len(data))
        ior.submit()
        (c,) = ior.wait()
        check(c.check() == len(data) and bytes(target.get()) == data,
              "usrbio GPU iov over a CuPy array")
        f.close(); ior.close(); iov.close()
    os.unlink(backing)
    driver.close()


def check_usrbio_gpu(mountpoint):
    data = os.urandom(16 << 20)
    path = os.path.join(mountpoint, "usrbio-gpu.bin")
    with open(path, "wb") as out:
        out.write(data)
    with fgds.Session(mountpoint) as session:
        tensor = torch.zeros(len(data), dtype=torch.uint8, device="cuda")
        iov = session.wrap_gpu(tensor)
        path_kind, reason = iov.gpu_path()
        print(f"     GPU iov path {path_kind} (1 direct, 3 bounce), "
              f"reason {reason}")
        ior = session.create_ior(entries=64)
        f = session.open(path, os.O_RDWR)
        # Unaligned and aligned pieces, many in flight.
        pieces = [(i * (1 << 20) + (i % 3) * 512, (1 << 20) - 1024)
                  for i in range(16)]
        for i, (offset, length) in enumerate(pieces):
            ior.prep_read(iov, offset, f, offset, length, userdata=i)
        ior.submit()
        done = []
        while len(done) < len(pieces):
            done += ior.wait(min=1)
        host = tensor.cpu().numpy().tobytes()
        check(all(c.check() == pieces[c.userdata][1] for c in done) and
              all(host[o:o + n] == data[o:o + n] for o, n in pieces),
              "usrbio GPU iov reads (16 in flight) land in a torch tensor")
        tensor.add_(1)
        torch.cuda.synchronize()
        ior.prep_write(iov, 0, f, 0, 1 << 20, userdata=99)
        ior.submit()
        (c,) = ior.wait()
        with open(path, "rb") as back:
            written = back.read(1 << 20)
        check(c.check() == 1 << 20 and
              written == bytes(tensor[:1 << 20].cpu().numpy().tobytes()),
              "usrbio GPU iov write from a torch tensor")
        f.close(); ior.close(); iov.close()
    os.unlink(path)


# ---- speed -----------------------------------------------------------------

def drop_caches(path):
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def warm_cache(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def make_big_file(path, total_bytes, tensors):
    per = total_bytes // tensors
    state = {}
    for i in range(tensors):
        dtype = (torch.bfloat16, torch.float32, torch.float16,
                 torch.int8)[i % 4]
        size = torch.empty((), dtype=dtype).element_size()
        # Odd row counts, so tensor boundaries are not 4 KiB-aligned.
        rows_ = per // size // 1024 - (i % 7)
        state[f"layer.{i:04d}.weight"] = torch.randint(
            -100, 100, (rows_, 1024), device="cuda").to(dtype)
    start = time.perf_counter()
    fgds.torch.save_file(state, path)
    seconds = time.perf_counter() - start
    size = os.path.getsize(path)
    print(f"     wrote {size / 2**30:.2f} GiB in {len(state)} tensors with "
          f"fgds.torch.save_file: {size / 1e9 / seconds:.2f} GB/s")
    return size


def odirect_read(path, threads=16, block=8 << 20):
    """Reads the whole file with O_DIRECT from `threads` threads into
    page-aligned host buffers: the disk's raw speed, nothing copied."""
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    next_offset = [0]
    lock = threading.Lock()

    def worker():
        buf = mmap.mmap(-1, block)
        while True:
            with lock:
                offset = next_offset[0]
                next_offset[0] += block
            if offset >= size:
                break
            os.preadv(fd, [buf], offset)
        buf.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    os.close(fd)


def timed(function, nbytes, rounds, prepare):
    """The median GB/s of `rounds` runs of function(), each after
    prepare(), and the last run's result."""
    speeds, result = [], None
    for _ in range(rounds):
        prepare()
        result = None  # frees the previous round's tensors first
        torch.cuda.synchronize()
        start = time.perf_counter()
        result = function()
        torch.cuda.synchronize()
        speeds.append(nbytes / 1e9 / (time.perf_counter() - start))
    return statistics.median(speeds), result


def bench_load(directory, total_bytes, tensors, rounds):
    import safetensors.torch as reference
    path = os.path.join(directory, "big.safetensors")
    size = make_big_file(path, total_bytes, tensors)
    results = {}
    for cache, prepare in (("cold", lambda: drop_caches(path)),
                           ("warm", lambda: warm_cache(path))):
        if cache == "cold":  # the disk's own speed, the cold baseline
            results[("odirect", cache)], _ = timed(
                lambda: odirect_read(path), size, rounds, prepare)
        results[("fgds", cache)], ours = timed(
            lambda: fgds.torch.load_file(path, "cuda"), size, rounds, prepare)
        results[("safetensors", cache)], theirs = timed(
            lambda: reference.load_file(path, "cuda"), size, rounds, prepare)
        check(set(ours) == set(theirs) and all(
            bit_equal(ours[n], theirs[n]) for n in theirs),
            f"8 GiB file ({cache}): fgds.torch.load_file == "
            f"safetensors.torch.load_file, all {len(theirs)} tensors")
        del ours, theirs
        torch.cuda.empty_cache()
    os.unlink(path)
    # How fgds.torch's driver moved the bytes (all rounds together).
    from fgds.torch import _drivers
    driver = _drivers.driver_for(torch.cuda.current_device())
    info, stats = driver.query(), driver.stats()
    rows.append(("fgds.torch driver: path (1 bounce, 2 direct), workers",
                 f"{info['path']}, {info['workers']} "
                 f"{info['direct_unavailable'] or ''}".strip()))
    rows.append(("fgds.torch driver bytes: page cache / O_DIRECT / buffered",
                 f"{stats['bytes_page_cache'] / 1e9:.1f} / "
                 f"{stats['bytes_o_direct'] / 1e9:.1f} / "
                 f"{stats['bytes_buffered'] / 1e9:.2f} GB"))
    for (who, cache), speed in sorted(results.items()):
        rows.append((f"{who} load, {cache}", f"{speed:.2f} GB/s"))
    cold_ratio = results[("fgds", "cold")] / results[("odirect", "cold")]
    warm_ratio = results[("fgds", "warm")] / results[("safetensors", "warm")]
    rows.append(("fgds cold / raw O_DIRECT cold (goal >= 0.95)",
                 f"{cold_ratio:.3f} " + met(cold_ratio >= 0.95)))
    rows.append(("fgds warm / safetensors warm (goal >= 5)",
                 f"{warm_ratio:.2f}x " + met(warm_ratio >= 5)))


def met(ok):
    return "met" if ok else "NOT met"


def bench_iops(mountpoint, seconds=5.0):
    path = os.path.join(mountpoint, "iops.bin")
    with open(path, "wb") as out:
        out.write(os.urandom(64 << 20))
    warm_cache(path)
    blocks = (64 << 20) // 4096
    with fgds.Session(mountpoint) as session:
        iov = session.create_iov(4096 * 64)
        ior = session.create_ior(entries=64)
        f = session.open(path)
        for depth in (1, 32):
            done, block, deadline = 0, 0, time.perf_counter() + seconds
            start = time.perf_counter()
            while time.perf_counter() < deadline:
                for slot in range(depth):
                    block = (block * 7919 + 1) % blocks
                    ior.prep_read(iov, slot * 4096, f, block * 4096, 4096)
                ior.submit()
                got = 0
                while got < depth:
                    got += len(ior.wait(min=depth - got, max=depth - got))
                done += depth
            iops = done / (time.perf_counter() - start)
            rows.append((f"usrbio 4 KiB reads, one Python thread, "
                         f"{depth} per submit", f"{iops:,.0f} IOPS"))
        f.close(); ior.close(); iov.close()
    os.unlink(path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="scratch on a real disk")
    parser.add_argument("--mount", required=True, help="an fgds mountpoint")
    parser.add_argument("--size", type=int, default=8 << 30)
    parser.add_argument("--tensors", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-bench", action="store_true")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"fgds from {os.path.dirname(fgds.__file__)}")
    directory = tempfile.mkdtemp(dir=args.dir)
    for step in (lambda: check_against_safetensors(directory),
                 lambda: check_gds_file(directory),
                 lambda: check_cupy(directory, args.mount),
                 lambda: check_usrbio_gpu(args.mount)):
        try:
            step()
        except Exception as error:  # noqa: BLE001 - one step's failure
            import traceback
            traceback.print_exc()
            check(False, f"{error!r}")
    if not args.skip_bench:
        bench_load(directory, args.size, args.tensors, args.rounds)
        bench_iops(args.mount)
    os.rmdir(directory)
    print()
    print(f"{'measure':<60} value")
    for what, value in rows:
        print(f"{what:<60} {value}")
    print(f"correctness: {len(failures)} failure(s)" +
          ("" if not failures else ": " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
