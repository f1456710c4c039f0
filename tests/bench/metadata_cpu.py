#!/usr/bin/env python3
"""CPU and wall time per metadata operation, native against the mount.

The load-insensitive companion of metadata.py: on a shared machine wall
times swing with the load, while the CPU an operation costs (the client's
user+sys time plus the daemon's, all its threads, from /proc) moves much
less. Mounts a fresh daemon over a private tmpfs, then for each phase runs
N operations in one directory, first natively on the backing directory,
then on the mount; prints microseconds per operation (median of R runs)
and native/mount ratios.

usage (as root): tests/bench/metadata_cpu.py FGDS FUSE_URING_MODE N R
e.g. tests/bench/metadata_cpu.py build/tools/fgds off 20000 3
"""
import os, sys, subprocess, time, tempfile, shutil, statistics
if len(sys.argv) != 5 or not sys.argv[3].isdigit() or not sys.argv[4].isdigit():
    sys.exit('usage: metadata_cpu.py FGDS off|auto|on N R')
if os.geteuid() != 0:
    print('metadata_cpu: mounting needs root; skipped', file=sys.stderr)
    sys.exit(77)
fgds, mode, n, rep = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
TCK = os.sysconf('SC_CLK_TCK')
def pcpu(pids):
    t = 0
    for p in pids:
        try:
            f = open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()
            t += int(f[11]) + int(f[12])
        except FileNotFoundError: pass
    return t / TCK
def ccpu():
    t = os.times(); return t.user + t.system
top = tempfile.mkdtemp(prefix='i16cpu.', dir='/var/tmp'); os.chmod(top, 0o755)
mnt, data = top + '/mnt', top + '/data'; os.mkdir(mnt); os.mkdir(data)
subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=4g', 'tmpfs', data], check=True)
d = subprocess.Popen([fgds, 'mount', '-f', '--fuse-uring', mode, '--data', data, mnt], stderr=subprocess.DEVNULL)
for _ in range(100):
    if os.path.ismount(mnt): break
    time.sleep(0.1)
pids = [int(x) for x in subprocess.run(['pgrep', '-f', 'mount -f --fuse-uring %s --data %s' % (mode, data)], capture_output=True, text=True).stdout.split()]
flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC
phases = {
 'create': lambda r, i: os.close(os.open(r + '/f%d' % i, flags, 0o644)),
 'stat': lambda r, i: os.lstat(r + '/f%d' % i),
 'chmod': lambda r, i: os.chmod(r + '/f%d' % i, 0o600),
 'rename': lambda r, i: os.rename(r + '/f%d' % i, r + '/g%d' % i),
 'unlink': lambda r, i: os.unlink(r + '/g%d' % i),
 'mkdir': lambda r, i: os.mkdir(r + '/d%d' % i),
 'rmdir': lambda r, i: os.rmdir(r + '/d%d' % i),
}
res = {p: {'nw': [], 'mw': [], 'nc': [], 'mc': []} for p in phases}
for k in range(rep):
    for base, tag in ((data, 'n'), (mnt, 'm')):
        r = base + '/run%d%s' % (k, tag); os.mkdir(r)
        for p, fn in phases.items():
            c0, d0, w0 = ccpu(), pcpu(pids), time.perf_counter()
            for i in range(n): fn(r, i)
            w, c, dc = time.perf_counter() - w0, ccpu() - c0, pcpu(pids) - d0
            res[p][tag + 'w'].append(w); res[p][tag + 'c'].append(c + (dc if tag == 'm' else 0))
        os.rmdir(r)
print('%s fuse-uring %s, %d ops x median of %d; us per op' % (fgds, mode, n, rep))
print('%-7s %9s %9s %6s | %9s %9s %6s' % ('phase', 'nat wall', 'mnt wall', 'ratio', 'nat cpu', 'mnt cpu', 'ratio'))
for p, v in res.items():
    nw, mw, nc, mc = (statistics.median(v[x]) * 1e6 / n for x in ('nw', 'mw', 'nc', 'mc'))
    print('%-7s %9.1f %9.1f %5.2fx | %9.1f %9.1f %5.2fx' % (p, nw, mw, nw / mw, nc, mc, nc / mc if mc else 0))
subprocess.run(['umount', mnt]); d.wait(timeout=30)
subprocess.run(['umount', data]); shutil.rmtree(top, ignore_errors=True)
