// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_limits.c
 *
 * The module's bounds, changed at run time through its parameters: the
 * per-registration size (max_buffer_size, at most a token's 1 TiB range)
 * and the exporter-revoke wait (invalidate_timeout_ms) expiring under a
 * storage request that is still in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "klt.h"

#define PARAMS "/sys/module/fgds/parameters/"
#define TIB (1ULL << 40)

int param_write(const char *name, const char *value)
{
	char path[128];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

void param_read(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", path, errname(errno));
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		fail("read %s: %s", path, errname(errno));
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/* ---- max_buffer_size ------------------------------------------------ */

static char saved_max_size[64];

static void restore_max_size(void)
{
	int ret = param_write("max_buffer_size", saved_max_size);

	/* Only reachable when the test already failed to write it. */
	if (ret)
		info("restoring max_buffer_size=%s: %s", saved_max_size,
		     errname(-ret));
}

static void save_max_size(void)
{
	param_read("max_buffer_size", saved_max_size, sizeof(saved_max_size));
	klt_on_exit = restore_max_size;
}

static uint64_t query_max_size(void)
{
	struct fgds_query q;
	int dev = fgds_open(), ret;

	memset(&q, 0, sizeof(q));
	ret = fgds_query(dev, &q);
	close(dev);
	if (ret)
		fail("QUERY: %s", errname(-ret));
	return q.max_buffer_size;
}

/*
 * A token's offset range is 1 TiB, so no registration may be larger: the
 * parameter refuses any value above it (and 0), and takes 1 TiB itself.
 * The lab's 256 MiB BAR cannot show the bound on a registration; this
 * shows that the bound cannot be configured away.
 */
void t_max_buffer_size_ceiling(void)
{
	char text[64], value[64];
	int ret;

	save_max_size();
	snprintf(value, sizeof(value), "%llu", TIB + PAGE);
	ret = param_write("max_buffer_size", value);
	if (ret != -EINVAL)
		fail("max_buffer_size=%s (1 TiB + 4 KiB): %s, want EINVAL",
		     value, ret ? errname(-ret) : "accepted");
	param_read("max_buffer_size", text, sizeof(text));
	if (strcmp(text, saved_max_size))
		fail("max_buffer_size is %s after a refused write, was %s",
		     text, saved_max_size);
	ret = param_write("max_buffer_size", "0");
	if (ret != -EINVAL)
		fail("max_buffer_size=0: %s, want EINVAL",
		     ret ? errname(-ret) : "accepted");

	snprintf(value, sizeof(value), "%llu", TIB);
	ret = param_write("max_buffer_size", value);
	if (ret)
		fail("max_buffer_size=%s (1 TiB): %s", value, errname(-ret));
	param_read("max_buffer_size", text, sizeof(text));
	if (strcmp(text, value))
		fail("max_buffer_size reads %s after writing %s", text, value);
	/* The BAR is the smaller bound here. */
	if (query_max_size() != lab.info.bar_size)
		fail("QUERY max_buffer_size %#" PRIx64
		     " with the parameter at 1 TiB, want the BAR size %#llx",
		     query_max_size(), (unsigned long long)lab.info.bar_size);
}

/*
 * The bound as a registration meets it, lowered at run time: one page
 * more is E2BIG (include/uapi/fgds_ioctl.h), exactly the bound registers.
 */
void t_max_buffer_size_lowered(void)
{
	const uint64_t bound = 8 * MiB;
	int dev, dmabuf, ret;
	char value[64];
	uint64_t token;

	save_max_size();
	snprintf(value, sizeof(value), "%llu", (unsigned long long)bound);
	ret = param_write("max_buffer_size", value);
	if (ret)
		fail("max_buffer_size=%s: %s", value, errname(-ret));
	if (query_max_size() != bound)
		fail("QUERY max_buffer_size %#" PRIx64 ", want %#" PRIx64,
		     query_max_size(), bound);

	dev = fgds_open();
	dmabuf = texp_export_ok(slot_off(SLOT_TIMEOUT), bound + PAGE, 0, 0);
	ret = fgds_reg(dev, dmabuf, lab.raw_fd, 0, bound + PAGE, &token);
	if (!ret)
		fail("REG_BUFFER of max_buffer_size (%#" PRIx64
		     ") + 4 KiB succeeded",
		     bound);
	expect_err(ret, E2BIG, "REG_BUFFER of max_buffer_size + 4 KiB");
	ret = fgds_reg(dev, dmabuf, lab.raw_fd, 0, bound, &token);
	if (ret)
		fail("REG_BUFFER of exactly max_buffer_size: %s",
		     errname(-ret));
	ret = fgds_unreg(dev, token);
	if (ret)
		fail("UNREG_BUFFER: %s", errname(-ret));
	close(dmabuf);
	close(dev);
}

/* ---- invalidate_timeout_ms ------------------------------------------ */

#define TIMEOUT_MS 500
#define SLOW_READ (2 * MiB)

static char saved_timeout[32];

static void restore_timeout(void)
{
	int ret = param_write("invalidate_timeout_ms", saved_timeout);

	/* Only reachable when the test already failed to write it. */
	if (ret)
		info("restoring invalidate_timeout_ms=%s: %s", saved_timeout,
		     errname(-ret));
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct slow_read {
	int fd;
	uint8_t *dst;
	ssize_t n;
	int err;
	long end_ms;
	volatile int done;
};

static void *slow_reader(void *p)
{
	struct slow_read *r = p;

	r->n = pread(r->fd, r->dst, SLOW_READ, 0);
	r->err = r->n < 0 ? errno : 0;
	r->end_ms = now_ms();
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Reads in flight on @dev (/sys/block/NAME/inflight), or -1. */
static long reads_inflight(const char *dev)
{
	const char *name = strrchr(dev, '/');
	char path[128], text[64];
	long reads = -1, writes;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/block/%s/inflight",
		 name ? name + 1 : dev);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	if (sscanf(text, "%ld %ld", &reads, &writes) != 2)
		return -1;
	return reads;
}

/*
 * The exporter revokes memory that an O_DIRECT read from the throttled
 * drive (lab/qemu.sh: its 512 KiB commands complete about 2 s apart)
 * still targets. With invalidate_timeout_ms lowered to 500, the revoke
 * (the exporter's free path, under its reservation lock) must return after
 * about 500 ms with the read still in flight. The read then completes
 * into the BAR (fgds
 * cannot stop an issued request: docs/kmod.md, "Draining"), and the
 * registration is released only after it has: no use after free, which
 * KASAN watches, and nothing left registered.
 */
void t_invalidate_timeout(void)
{
	struct slow_read r = { 0 };
	long t0, revoke_ms, inflight_at_return, peak = 0;
	int dev, ret, done_at_return;
	pthread_t th;
	struct gbuf g;

	if (!lab.slow_path)
		skip("no --slow drive (the lab's throttled fgds-slow)");
	param_read("invalidate_timeout_ms", saved_timeout,
		   sizeof(saved_timeout));
	klt_on_exit = restore_timeout;
	ret = param_write("invalidate_timeout_ms", "500");
	if (ret)
		fail("invalidate_timeout_ms=500: %s", errname(-ret));

	r.fd = open(lab.slow_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (r.fd < 0)
		fail("open %s: %s", lab.slow_path, errname(errno));
	dev = fgds_open();
	gbuf_setup(&g, dev, r.fd, slot_off(SLOT_TIMEOUT), SLOW_READ, 0, 0);
	/* Fault every page in first, so the read's GUP is quick. */
	for (uint64_t off = 0; off < SLOW_READ; off += PAGE)
		touch_read(g.map + off);
	r.dst = g.map;
	if (pthread_create(&th, NULL, slow_reader, &r))
		fail("pthread_create");

	/*
	 * Revoke once every command of the read is issued (its pages are
	 * pinned when each bio is built, before it is submitted), so the
	 * revoke cannot catch the read between two bios.
	 */
	t0 = now_ms();
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE) &&
	       now_ms() - t0 < 5000) {
		long n = reads_inflight(lab.slow_path);

		if (n > peak)
			peak = n;
		if (n >= 3)
			break;
		usleep(1000);
	}
	if (__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
		fail("the %llu KiB read from %s finished (%zd, %s) after %ld ms, before the revoke: is the drive throttled (lab/qemu.sh)?",
		     SLOW_READ / KiB, lab.slow_path, r.n, errname(r.err),
		     r.end_ms - t0);
	if (peak < 3)
		fail("only %ld reads in flight on %s after 5 s, want 3 or more",
		     peak, lab.slow_path);

	t0 = now_ms();
	ret = texp_revoke(g.dmabuf);
	revoke_ms = now_ms() - t0;
	done_at_return = __atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
	inflight_at_return = reads_inflight(lab.slow_path);
	if (ret)
		fail("exporter REVOKE: %s", errname(-ret));
	info("revoke returned after %ld ms (invalidate_timeout_ms %d), %ld reads still in flight, the read %s",
	     revoke_ms, TIMEOUT_MS, inflight_at_return,
	     done_at_return ? "done" : "not done");
	if (done_at_return)
		fail("the read completed (at +%ld ms) before the revoke returned (%ld ms): the revoke waited for the I/O, not the timeout",
		     r.end_ms - t0, revoke_ms);
	if (revoke_ms < TIMEOUT_MS - 20)
		fail("the revoke returned after %ld ms, before invalidate_timeout_ms (%d) with I/O in flight",
		     revoke_ms, TIMEOUT_MS);
	if (revoke_ms > 3 * TIMEOUT_MS)
		fail("the revoke took %ld ms with invalidate_timeout_ms %d",
		     revoke_ms, TIMEOUT_MS);
	/*
	 * fgds has unmapped its attachment; a static exporter's mapping stays
	 * cached by the dma-buf core until detach, a dynamic one's goes.
	 */
	{
		struct texp_status ts;

		if (!texp_status(g.dmabuf, &ts))
			info("after the revoke the exporter sees %u attachments, %u mappings",
			     ts.attachments, ts.mappings);
	}

	/*
	 * Unregister and unmap while the read is still in flight: the release
	 * waits for it, in a worker.
	 */
	gbuf_teardown(&g);
	close(dev);
	if (pthread_join(th, NULL))
		fail("pthread_join");
	info("the read ended %ld ms after the revoke began: %zd (%s)",
	     r.end_ms - t0, r.n, errname(r.err));
	if (r.n != (ssize_t)SLOW_READ)
		fail("the read in flight at the revoke returned %zd (%s), want %llu: an issued request completes",
		     r.n, errname(r.err), SLOW_READ);
	if (wait_registrations(0, 10000) != 0)
		fail("registrations %ld 10 s after the read completed",
		     sysfs_registrations());
	close(r.fd);
}
