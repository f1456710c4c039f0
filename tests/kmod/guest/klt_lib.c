// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/klt_lib.c
 *
 * Helpers shared by the tests: reporting, the exporter's and fgds's ioctls,
 * sysfs, registered buffers, data patterns and fault catching.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "klt.h"

struct klt_lab lab;
const char *klt_test = "?";
void (*klt_on_exit)(void);

void klt_run_on_exit(void)
{
	void (*fn)(void) = klt_on_exit;

	klt_on_exit = NULL; /* once, even if it fails itself */
	if (fn)
		fn();
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One write per line, so lines of concurrent processes never mix. */
	dprintf(STDOUT_FILENO, "%s %s%s%s\n", kind, klt_test, *msg ? ": " : "",
		msg);
}

void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("FAIL", fmt, ap);
	va_end(ap);
	klt_run_on_exit();
	_exit(1);
}

void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("SKIP", fmt, ap);
	va_end(ap);
	klt_run_on_exit();
	_exit(2);
}

void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("INFO", fmt, ap);
	va_end(ap);
}

const char *errname(int err)
{
	const char *name = err ? strerrorname_np(err) : "success";

	return name ? name : "E?";
}

void expect_err(int ret, int want, const char *what)
{
	if (ret == -want)
		return;
	fail("%s: got %s, want %s", what, ret ? errname(-ret) : "success",
	     errname(want));
}

int texp_export(uint64_t off, uint64_t size, uint64_t seg, uint32_t flags)
{
	struct texp_export e = {
		.offset = off,
		.size = size,
		.segment_size = seg,
		.flags = flags,
		.fd = -1,
	};

	if (ioctl(lab.texp_fd, TEXP_IOCTL_EXPORT, &e))
		return -errno;
	return e.fd;
}

int texp_export_ok(uint64_t off, uint64_t size, uint64_t seg, uint32_t flags)
{
	int fd = texp_export(off, size, seg, flags);

	if (fd < 0)
		fail("exporter EXPORT off=%#llx size=%#llx seg=%#llx flags=%#x: %s",
		     (unsigned long long)off, (unsigned long long)size,
		     (unsigned long long)seg, flags, errname(-fd));
	return fd;
}

int texp_revoke(int dmabuf_fd)
{
	struct texp_revoke r = { .fd = dmabuf_fd };

	return ioctl(lab.texp_fd, TEXP_IOCTL_REVOKE, &r) ? -errno : 0;
}

int texp_status(int dmabuf_fd, struct texp_status *st)
{
	*st = (struct texp_status){ .fd = dmabuf_fd };
	return ioctl(lab.texp_fd, TEXP_IOCTL_STATUS, st) ? -errno : 0;
}

void expect_texp_status(int dmabuf_fd, unsigned int attachments,
			unsigned int mappings, const char *when)
{
	struct texp_status st;
	int ret = texp_status(dmabuf_fd, &st);

	if (ret)
		fail("exporter STATUS %s: %s", when, errname(-ret));
	if (st.attachments != attachments || st.mappings != mappings)
		fail("%s: the exporter sees %u attachments and %u mappings, want %u and %u",
		     when, st.attachments, st.mappings, attachments, mappings);
}

uint64_t slot_off(enum klt_slot slot)
{
	uint64_t nslots = lab.info.bar_size / SLOT_SIZE;

	/* A smaller BAR than the lab's 256 MiB: slots are reused. */
	return (slot % (nslots - 1)) * SLOT_SIZE;
}

uint64_t hostcheck_off(void)
{
	return lab.info.bar_size - SLOT_SIZE;
}

int fgds_open(void)
{
	int fd = open(lab.fgds_path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fail("open %s: %s", lab.fgds_path, errname(errno));
	return fd;
}

int fgds_query(int dev, struct fgds_query *q)
{
	return ioctl(dev, FGDS_IOCTL_QUERY, q) ? -errno : 0;
}

int fgds_reg_args(int dev, struct fgds_reg_buffer *r)
{
	return ioctl(dev, FGDS_IOCTL_REG_BUFFER, r) ? -errno : 0;
}

int fgds_reg(int dev, int dmabuf, int storage, uint64_t off, uint64_t size,
	     uint64_t *token)
{
	struct fgds_reg_buffer r = {
		.dmabuf_fd = dmabuf,
		.storage_fd = storage,
		.dmabuf_offset = off,
		.size = size,
	};
	int ret = fgds_reg_args(dev, &r);

	if (!ret && token)
		*token = r.token;
	return ret;
}

int fgds_unreg(int dev, uint64_t token)
{
	struct fgds_unreg_buffer u = { .token = token };

	return ioctl(dev, FGDS_IOCTL_UNREG_BUFFER, &u) ? -errno : 0;
}

void *fgds_mmap(int dev, uint64_t token, size_t len, int flags, int *err)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, dev,
		       (off_t)token);

	if (p == MAP_FAILED) {
		*err = errno;
		return NULL;
	}
	*err = 0;
	return p;
}

static long read_long(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	return strtol(buf, NULL, 0);
}

long sysfs_registrations(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/registrations", lab.sysfs);
	return read_long(path);
}

long wait_registrations(long want, int timeout_ms)
{
	long v = sysfs_registrations();

	for (int waited = 0; v != want && waited < timeout_ms; waited += 20) {
		usleep(20 * 1000);
		v = sysfs_registrations();
	}
	return v;
}

long module_refcnt(const char *module)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", module);
	return read_long(path);
}

void gbuf_setup(struct gbuf *g, int dev, int storage_fd, uint64_t bar_off,
		uint64_t size, uint64_t seg, uint32_t flags)
{
	int ret, err;

	g->dev = dev;
	g->bar_off = bar_off;
	g->size = size;
	g->dmabuf = texp_export_ok(bar_off, size, seg, flags);
	ret = fgds_reg(dev, g->dmabuf, storage_fd, 0, size, &g->token);
	if (ret)
		fail("REG_BUFFER of BAR [%#llx, +%#llx) seg %#llx flags %#x: %s",
		     (unsigned long long)bar_off, (unsigned long long)size,
		     (unsigned long long)seg, flags, errname(-ret));
	g->map = fgds_mmap(dev, g->token, size, MAP_SHARED, &err);
	if (!g->map)
		fail("mmap of token %#llx: %s", (unsigned long long)g->token,
		     errname(err));
}

void gbuf_teardown(struct gbuf *g)
{
	int ret;

	if (munmap(g->map, g->size))
		fail("munmap: %s", errname(errno));
	ret = fgds_unreg(g->dev, g->token);
	if (ret)
		fail("UNREG_BUFFER of a live registration: %s", errname(-ret));
	close(g->dmabuf);
}

void *xmalloc_aligned(size_t len)
{
	void *p;

	if (posix_memalign(&p, PAGE, len ? len : PAGE))
		fail("out of memory for %zu bytes", len);
	return p;
}

void read_full(int fd, void *buf, size_t len, uint64_t off, const char *what)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n != (ssize_t)len)
		fail("%s: pread(%zu at %#llx) returned %zd (%s)", what, len,
		     (unsigned long long)off, n,
		     n < 0 ? errname(errno) : "short");
}

void write_full(int fd, const void *buf, size_t len, uint64_t off,
		const char *what)
{
	ssize_t n = pwrite(fd, buf, len, (off_t)off);

	if (n != (ssize_t)len)
		fail("%s: pwrite(%zu at %#llx) returned %zd (%s)", what, len,
		     (unsigned long long)off, n,
		     n < 0 ? errname(errno) : "short");
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
}

/* Poisons dst so that every byte differs from what a transfer must bring. */
void fill_inverse(volatile uint8_t *dst, const uint8_t *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = (uint8_t)~src[i];
}

void expect_same(const volatile uint8_t *got, const uint8_t *want, size_t len,
		 const char *what)
{
	size_t i, bad = 0, first = len;

	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			if (first == len)
				first = i;
			bad++;
		}
	}
	if (bad)
		fail("%s: %zu of %zu bytes differ, first at %#zx (got %02x want %02x)",
		     what, bad, len, first, got[first], want[first]);
}

uint64_t rnd(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
		    (uint64_t)(uintptr_t)&s;
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t fault_sig;
static void *volatile fault_addr_seen;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	fault_sig = sig;
	fault_addr_seen = si->si_addr;
	siglongjmp(fault_jmp, 1);
}

int catch_fault(void (*fn)(void *), void *arg, void **fault_addr)
{
	struct sigaction sa = { .sa_sigaction = fault_handler,
				.sa_flags = SA_SIGINFO };
	struct sigaction old_bus, old_segv;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	fault_sig = 0;
	fault_addr_seen = NULL;
	if (!sigsetjmp(fault_jmp, 1))
		fn(arg);
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	if (fault_addr)
		*fault_addr = fault_addr_seen;
	return fault_sig;
}

void touch_read(void *addr)
{
	(void)*(volatile uint8_t *)addr;
}
