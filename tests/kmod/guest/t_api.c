// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_api.c
 *
 * The ioctl and mmap interface: QUERY, REG_BUFFER, UNREG_BUFFER, the mmap
 * rules, and one test per documented rejection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "klt.h"

/* ------------------------------------------------------------ QUERY */

static struct fgds_query query_ok(int dev, int storage_fd)
{
	struct fgds_query q = { 0 };
	int ret;

	if (storage_fd >= 0) {
		q.flags = FGDS_QUERY_STORAGE_FD;
		q.storage_fd = storage_fd;
	}
	ret = fgds_query(dev, &q);
	if (ret)
		fail("QUERY (storage_fd %d): %s", storage_fd, errname(-ret));
	return q;
}

void t_query(void)
{
	int dev = fgds_open();
	struct fgds_query q = query_ok(dev, -1);

	if (q.abi_version != FGDS_ABI_VERSION)
		fail("abi_version %u, want %u", q.abi_version,
		     FGDS_ABI_VERSION);
	if (q.bar_index != 2)
		fail("bar_index %u, want 2 (ivshmem BAR2)", q.bar_index);
	if (q.bar_start != lab.info.bar_phys_start)
		fail("bar_start %#llx, exporter says BAR2 starts at %#llx",
		     (unsigned long long)q.bar_start,
		     (unsigned long long)lab.info.bar_phys_start);
	if (q.bar_size != lab.info.bar_size)
		fail("bar_size %#llx, exporter says %#llx",
		     (unsigned long long)q.bar_size,
		     (unsigned long long)lab.info.bar_size);
	if (lab.want_max_buffers && q.max_buffers != lab.want_max_buffers)
		fail("max_buffers %u, module loaded with max_buffers=%u",
		     q.max_buffers, lab.want_max_buffers);
	if (q.buffers != 0)
		fail("buffers %u on a fresh open file", q.buffers);
	if (!q.max_buffer_size || q.max_buffer_size % PAGE)
		fail("max_buffer_size %#llx",
		     (unsigned long long)q.max_buffer_size);
	if (!memchr(q.version, 0, sizeof(q.version)) || !q.version[0])
		fail("version not a NUL-terminated nonempty string");
	info("version '%s' max_buffer_size %#llx max_buffers %u p2p_distance %d",
	     q.version, (unsigned long long)q.max_buffer_size, q.max_buffers,
	     q.p2p_distance);
	/* Not in the header: report what "no storage fd" as -1 does. */
	q = (struct fgds_query){ .storage_fd = -1 };
	info("QUERY without FGDS_QUERY_STORAGE_FD, storage_fd -1: %s",
	     errname(-fgds_query(dev, &q)));
}

static void expect_p2p(const char *path, int open_flags, int want)
{
	int dev = fgds_open();
	int fd = open(path, open_flags | O_CLOEXEC);
	struct fgds_query q;

	if (fd < 0)
		fail("open %s: %s", path, errname(errno));
	q = query_ok(dev, fd);
	if (q.p2p_status != want)
		fail("p2p_status for %s: %d (%s), want %d (%s)", path,
		     q.p2p_status, q.p2p_status ? errname(-q.p2p_status) : "ok",
		     want, want ? errname(-want) : "ok");
	info("p2p_distance for %s: %d", path, q.p2p_distance);
}

void t_query_p2p_raw(void)
{
	expect_p2p(lab.raw_path, O_RDONLY, 0);
}

void t_query_p2p_ext4(void)
{
	expect_p2p(lab.ext4_file, O_RDONLY, 0);
}

void t_query_p2p_noroute(void)
{
	if (!lab.noroute_path)
		skip("%s", lab.noroute_why);
	expect_p2p(lab.noroute_path, O_RDONLY, -EREMOTEIO);
}

static int tmpfs_file(void)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/klt-tmpfs-XXXXXX", lab.tmp_dir);
	fd = mkstemp(path);
	if (fd < 0)
		fail("mkstemp %s: %s", path, errname(errno));
	unlink(path);
	if (ftruncate(fd, 1 * MiB))
		fail("ftruncate on tmpfs: %s", errname(errno));
	return fd;
}

void t_query_p2p_tmpfs(void)
{
	int dev = fgds_open();
	struct fgds_query q = query_ok(dev, tmpfs_file());

	if (q.p2p_status != -ENOTBLK)
		fail("p2p_status for a tmpfs file: %d (%s), want -ENOTBLK",
		     q.p2p_status,
		     q.p2p_status ? errname(-q.p2p_status) : "ok");
}

void t_query_reject_flags(void)
{
	int dev = fgds_open();
	struct fgds_query q = { .flags = 1u << 1 };

	expect_err(fgds_query(dev, &q), EINVAL, "QUERY flags 0x2");
	q.flags = 1u << 31;
	expect_err(fgds_query(dev, &q), EINVAL, "QUERY flags 0x80000000");
}

void t_query_reject_reserved(void)
{
	int dev = fgds_open();

	for (int i = 0; i < 4; i++) {
		struct fgds_query q = { 0 };
		char what[64];

		q.reserved[i] = 1;
		snprintf(what, sizeof(what), "QUERY reserved[%d] = 1", i);
		expect_err(fgds_query(dev, &q), EINVAL, what);
	}
}

/* ------------------------------------------------- REG, mmap, UNREG */

void t_reg_mmap_unreg(void)
{
	int dev = fgds_open();
	struct fgds_query q;
	struct gbuf g;
	uint8_t *want = xmalloc_aligned(MiB);
	int dmabuf;
	long regs;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	expect_texp_status(g.dmabuf, 1, 1, "with one registration");
	if (g.token % PAGE)
		fail("token %#llx not page aligned",
		     (unsigned long long)g.token);
	regs = sysfs_registrations();
	if (regs != 1)
		fail("registrations %ld after one REG_BUFFER, want 1", regs);
	q = query_ok(dev, -1);
	if (q.buffers != 1)
		fail("QUERY buffers %u after one REG_BUFFER", q.buffers);

	/* The CPU reads and writes the BAR through the mapping. */
	fill_pattern(want, MiB, 1);
	memcpy(g.map, want, MiB);
	expect_same(g.map, want, MiB,
		    "CPU write then read through the mapping");

	dmabuf = dup(g.dmabuf); /* gbuf_teardown closes its fd */
	gbuf_teardown(&g);
	q = query_ok(dev, -1);
	if (q.buffers != 0)
		fail("QUERY buffers %u after UNREG_BUFFER", q.buffers);
	regs = wait_registrations(0, 5000);
	if (regs != 0)
		fail("registrations %ld 5 s after munmap + UNREG, want 0",
		     regs);
	expect_texp_status(dmabuf, 0, 0, "after the registration is gone");
}

void t_reg_two_tokens(void)
{
	int dev = fgds_open();
	int dmabuf = texp_export_ok(slot_off(SLOT_API), MiB, 0, 0);
	uint64_t t1, t2;
	uint8_t *m1, *m2;
	int ret, err;

	/* The same memory registered twice: two tokens, one set of pages. */
	ret = fgds_reg(dev, dmabuf, lab.raw_fd, 0, MiB, &t1);
	if (!ret)
		ret = fgds_reg(dev, dmabuf, lab.raw_fd, 0, MiB, &t2);
	if (ret)
		fail("REG_BUFFER: %s", errname(-ret));
	if (t1 == t2)
		fail("two registrations got the same token %#llx",
		     (unsigned long long)t1);
	m1 = fgds_mmap(dev, t1, MiB, MAP_SHARED, &err);
	m2 = m1 ? fgds_mmap(dev, t2, MiB, MAP_SHARED, &err) : NULL;
	if (!m2)
		fail("mmap: %s", errname(err));
	m1[4096] = 0x5a;
	m2[8192] = 0xa5;
	if (m2[4096] != 0x5a || m1[8192] != 0xa5)
		fail("two registrations of the same BAR range do not alias");
	if (sysfs_registrations() != 2)
		fail("registrations %ld, want 2", sysfs_registrations());
}

void t_reg_dmabuf_closed(void)
{
	int dev = fgds_open();
	int dmabuf = texp_export_ok(slot_off(SLOT_API), MiB, 0, 0);
	uint8_t *want = xmalloc_aligned(MiB);
	uint64_t token;
	uint8_t *m;
	int ret, err;

	ret = fgds_reg(dev, dmabuf, lab.raw_fd, 0, MiB, &token);
	if (ret)
		fail("REG_BUFFER: %s", errname(-ret));
	close(dmabuf); /* the module keeps its own reference */
	m = fgds_mmap(dev, token, MiB, MAP_SHARED, &err);
	if (!m)
		fail("mmap after closing the dma-buf fd: %s", errname(err));
	read_full(lab.raw_fd, want, MiB, 0, "reference read");
	fill_inverse(m, want, MiB);
	read_full(lab.raw_dfd, m, MiB, 0, "O_DIRECT read into the mapping");
	expect_same(m, want, MiB, "O_DIRECT read after closing the dma-buf fd");
}

void t_mmap_subrange(void)
{
	int dev = fgds_open();
	struct gbuf g;
	uint8_t *sub;
	int err;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	sub = fgds_mmap(dev, g.token + 64 * KiB, 128 * KiB, MAP_SHARED, &err);
	if (!sub)
		fail("mmap of [64 KiB, +128 KiB) of a 1 MiB registration: %s",
		     errname(err));
	sub[0] = 0x11;
	sub[128 * KiB - 1] = 0x22;
	if (g.map[64 * KiB] != 0x11 || g.map[192 * KiB - 1] != 0x22)
		fail("sub-range mapping is not at its offset in the registration");
	/* The last page alone. */
	sub = fgds_mmap(dev, g.token + MiB - PAGE, PAGE, MAP_SHARED, &err);
	if (!sub)
		fail("mmap of the last page: %s", errname(err));
	sub[0] = 0x33;
	if (g.map[MiB - PAGE] != 0x33)
		fail("last-page mapping is not at its offset");
}

void t_mmap_past_end(void)
{
	int dev = fgds_open();
	struct gbuf g;
	int err;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	if (fgds_mmap(dev, g.token, MiB + PAGE, MAP_SHARED, &err))
		fail("mmap of size + 4 KiB succeeded");
	expect_err(-err, EINVAL, "mmap of size + 4 KiB");
	if (fgds_mmap(dev, g.token + MiB - PAGE, 2 * PAGE, MAP_SHARED, &err))
		fail("mmap crossing the end succeeded");
	expect_err(-err, EINVAL, "mmap of the last page + 1");
	if (fgds_mmap(dev, g.token + MiB, PAGE, MAP_SHARED, &err))
		fail("mmap at token + size succeeded");
	expect_err(-err, EINVAL, "mmap at token + size");
	if (fgds_mmap(dev, 0x7777000, PAGE, MAP_SHARED, &err))
		fail("mmap of an offset that is no token succeeded");
	expect_err(-err, EINVAL, "mmap of an offset that is no token");
}

void t_mmap_private(void)
{
	int dev = fgds_open();
	struct gbuf g;
	int err;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	if (fgds_mmap(dev, g.token, MiB, MAP_PRIVATE, &err))
		fail("MAP_PRIVATE succeeded");
	expect_err(-err, EINVAL, "MAP_PRIVATE");
}

void t_mmap_other_file(void)
{
	int dev = fgds_open(), other = fgds_open();
	struct gbuf g;
	int err;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	if (fgds_mmap(other, g.token, MiB, MAP_SHARED, &err))
		fail("another open file mapped this file's token");
	expect_err(-err, EACCES, "mmap of another open file's token");
}

void t_unreg_other_file(void)
{
	int dev = fgds_open(), other = fgds_open();
	struct gbuf g;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	expect_err(fgds_unreg(other, g.token), EINVAL,
		   "UNREG_BUFFER of another open file's token");
	gbuf_teardown(&g);
}

void t_mremap_grow(void)
{
	int dev = fgds_open();
	struct gbuf g;
	void *p;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), 2 * MiB, 0, 0);
	munmap(g.map + MiB, MiB); /* room to grow in place */
	p = mremap(g.map, MiB, 2 * MiB, 0);
	if (p != MAP_FAILED)
		fail("mremap grew the mapping in place (VM_DONTEXPAND missing)");
	info("mremap grow in place: %s", errname(errno));
	p = mremap(g.map, MiB, 2 * MiB, MREMAP_MAYMOVE);
	if (p != MAP_FAILED)
		fail("mremap MAYMOVE grew the mapping (VM_DONTEXPAND missing)");
	info("mremap grow MAYMOVE: %s", errname(errno));
}

void t_unreg_twice(void)
{
	int dev = fgds_open();
	struct gbuf g;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	gbuf_teardown(&g);
	expect_err(fgds_unreg(dev, g.token), EINVAL, "second UNREG_BUFFER");
	expect_err(fgds_unreg(dev, 0x123456000ULL), EINVAL,
		   "UNREG_BUFFER of a token never given");
}

void t_unreg_reject_flags(void)
{
	int dev = fgds_open();
	struct gbuf g;
	struct fgds_unreg_buffer u;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	u = (struct fgds_unreg_buffer){ .token = g.token, .flags = 1 };
	expect_err(ioctl(dev, FGDS_IOCTL_UNREG_BUFFER, &u) ? -errno : 0, EINVAL,
		   "UNREG_BUFFER flags 1");
	gbuf_teardown(&g); /* the rejected call left it registered */
}

void t_unreg_reject_pad(void)
{
	int dev = fgds_open();
	struct gbuf g;
	struct fgds_unreg_buffer u;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	u = (struct fgds_unreg_buffer){ .token = g.token, .pad = 1 };
	expect_err(ioctl(dev, FGDS_IOCTL_UNREG_BUFFER, &u) ? -errno : 0, EINVAL,
		   "UNREG_BUFFER pad 1");
	gbuf_teardown(&g);
}

void t_close_releases(void)
{
	int dev = fgds_open();
	int dmabuf = texp_export_ok(slot_off(SLOT_API), 4 * MiB, 0, 0);
	uint64_t token;
	uint8_t *m;
	long regs;
	int err;

	for (int i = 0; i < 3; i++) {
		int ret =
			fgds_reg(dev, dmabuf, lab.raw_fd, i * MiB, MiB, &token);

		if (ret)
			fail("REG_BUFFER #%d: %s", i, errname(-ret));
	}
	m = fgds_mmap(dev, token, MiB, MAP_SHARED, &err);
	if (!m)
		fail("mmap: %s", errname(err));
	m[0] = 1;
	munmap(m, MiB);
	close(dmabuf);
	regs = sysfs_registrations();
	if (regs != 3)
		fail("registrations %ld with 3 registered, want 3", regs);
	close(dev); /* with all three still registered */
	regs = wait_registrations(0, 5000);
	if (regs != 0)
		fail("registrations %ld 5 s after close, want 0", regs);
}

void t_close_keeps_mapping(void)
{
	int dev = fgds_open();
	struct gbuf g;
	long regs;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_API), MiB, 0, 0);
	close(g.dmabuf);
	close(dev);
	/* The VMA keeps the file and the registration alive. */
	g.map[100] = 0x77;
	if (g.map[100] != 0x77)
		fail("mapping unusable after close of the device fd");
	regs = sysfs_registrations();
	if (regs != 1)
		fail("registrations %ld with the mapping alive after close, want 1",
		     regs);
	munmap(g.map, g.size);
	regs = wait_registrations(0, 5000);
	if (regs != 0)
		fail("registrations %ld 5 s after the last munmap, want 0",
		     regs);
}

/* ------------------------------------------------------- rejections */

/* A REG_BUFFER that is valid except for what the caller changes. */
struct reject_ctx {
	int dev;
	int dmabuf;
	struct fgds_reg_buffer r;
};

static void reject_setup(struct reject_ctx *c)
{
	c->dev = fgds_open();
	c->dmabuf = texp_export_ok(slot_off(SLOT_REJECT), MiB, 0, 0);
	c->r = (struct fgds_reg_buffer){
		.dmabuf_fd = c->dmabuf,
		.storage_fd = lab.raw_fd,
		.size = MiB,
	};
}

/* Checks the rejection, then that nothing was registered by it. */
static void reject_expect(struct reject_ctx *c, int want, const char *what)
{
	long regs;

	struct texp_status st;

	expect_err(fgds_reg_args(c->dev, &c->r), want, what);
	regs = sysfs_registrations();
	if (regs != 0)
		fail("registrations %ld after a rejected REG_BUFFER", regs);
	/* The failed registration must not have left an attachment. */
	expect_texp_status(c->dmabuf, 0, 0, "after a rejected REG_BUFFER");
	if (c->r.dmabuf_fd != c->dmabuf && !texp_status(c->r.dmabuf_fd, &st))
		expect_texp_status(c->r.dmabuf_fd, 0, 0,
				   "after a rejected REG_BUFFER");
}

void t_reject_flags(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.flags = 1;
	reject_expect(&c, EINVAL, "REG_BUFFER flags 1");
	c.r.flags = 1u << 31;
	reject_expect(&c, EINVAL, "REG_BUFFER flags 0x80000000");
}

void t_reject_pad(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.pad = 1;
	reject_expect(&c, EINVAL, "REG_BUFFER pad 1");
}

void t_reject_reserved0(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.reserved[0] = 1;
	reject_expect(&c, EINVAL, "REG_BUFFER reserved[0] 1");
}

void t_reject_reserved1(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.reserved[1] = 1ULL << 63;
	reject_expect(&c, EINVAL, "REG_BUFFER reserved[1] 1<<63");
}

void t_reject_size0(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.size = 0;
	reject_expect(&c, EINVAL, "REG_BUFFER size 0");
}

void t_reject_size_unaligned(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.size = 64 * KiB + 512;
	reject_expect(&c, EINVAL, "REG_BUFFER size 64 KiB + 512");
}

void t_reject_offset_unaligned(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.dmabuf_offset = 512;
	c.r.size = 64 * KiB;
	reject_expect(&c, EINVAL, "REG_BUFFER dmabuf_offset 512");
}

void t_reject_erange(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.size = 2 * MiB;
	reject_expect(&c, ERANGE, "REG_BUFFER size 2 MiB of a 1 MiB dma-buf");
	c.r.size = PAGE;
	c.r.dmabuf_offset = MiB;
	reject_expect(&c, ERANGE, "REG_BUFFER offset 1 MiB of a 1 MiB dma-buf");
	c.r.size = 2 * PAGE;
	c.r.dmabuf_offset = MiB - PAGE;
	reject_expect(&c, ERANGE, "REG_BUFFER crossing the dma-buf's end");
	/* offset + size wraps around 2^64 */
	c.r.dmabuf_offset = ~0ULL - PAGE + 1;
	c.r.size = 2 * PAGE;
	reject_expect(&c, ERANGE, "REG_BUFFER offset + size wrapping 2^64");
}

void t_reject_ebadf_dmabuf(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.dmabuf_fd = -1;
	reject_expect(&c, EBADF, "REG_BUFFER dmabuf_fd -1");
	c.r.dmabuf_fd = 1000; /* not open */
	reject_expect(&c, EBADF, "REG_BUFFER dmabuf_fd 1000 (closed)");
}

void t_reject_ebadf_storage(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.storage_fd = -1;
	reject_expect(&c, EBADF, "REG_BUFFER storage_fd -1");
	c.r.storage_fd = 1000;
	reject_expect(&c, EBADF, "REG_BUFFER storage_fd 1000 (closed)");
}

/* dma_buf_get() on a file that is no dma-buf fails with -EINVAL. */
void t_reject_non_dmabuf(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.dmabuf_fd = lab.raw_fd;
	reject_expect(&c, EINVAL,
		      "REG_BUFFER with a block device as dmabuf_fd");
}

void t_reject_bad_nr(void)
{
	struct reject_ctx c;
	unsigned long bad[] = {
		_IOWR(FGDS_IOCTL_MAGIC, 3, struct fgds_reg_buffer),
		_IOWR(FGDS_IOCTL_MAGIC, 0x7f, struct fgds_query),
		_IOWR(FGDS_IOCTL_MAGIC + 1, 1, struct fgds_reg_buffer),
		_IO(FGDS_IOCTL_MAGIC, 1),
	};

	reject_setup(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "ioctl %#lx", bad[i]);
		expect_err(ioctl(c.dev, bad[i], &c.r) ? -errno : 0, ENOTTY,
			   what);
	}
}

void t_reject_short_struct(void)
{
	struct reject_ctx c;
	unsigned long shorter = _IOC(_IOC_READ | _IOC_WRITE, FGDS_IOCTL_MAGIC,
				     1, sizeof(struct fgds_reg_buffer) - 8);
	unsigned long longer = _IOC(_IOC_READ | _IOC_WRITE, FGDS_IOCTL_MAGIC, 1,
				    sizeof(struct fgds_reg_buffer) + 8);
	unsigned long unreg_rw =
		_IOWR(FGDS_IOCTL_MAGIC, 2, struct fgds_unreg_buffer);
	uint8_t big[sizeof(struct fgds_reg_buffer) + 8] = { 0 };

	reject_setup(&c);
	memcpy(big, &c.r, sizeof(c.r));
	expect_err(ioctl(c.dev, shorter, big) ? -errno : 0, ENOTTY,
		   "REG_BUFFER with a size 8 bytes short");
	expect_err(ioctl(c.dev, longer, big) ? -errno : 0, ENOTTY,
		   "REG_BUFFER with a size 8 bytes long");
	expect_err(ioctl(c.dev, unreg_rw, big) ? -errno : 0, ENOTTY,
		   "UNREG_BUFFER with _IOWR instead of _IOW");
	if (sysfs_registrations() != 0)
		fail("a rejected ioctl registered something");
}

/* System memory is no GPU memory: its addresses are outside the BAR. */
void t_reject_udmabuf(void)
{
	struct reject_ctx c;
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC,
					 .size = MiB };
	int udev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	int memfd, ubuf;

	if (udev < 0)
		skip("/dev/udmabuf: %s", errname(errno));
	memfd = memfd_create("klt-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, MiB) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		fail("memfd for udmabuf: %s", errname(errno));
	create.memfd = memfd;
	ubuf = ioctl(udev, UDMABUF_CREATE, &create);
	if (ubuf < 0)
		fail("UDMABUF_CREATE: %s", errname(errno));
	reject_setup(&c);
	c.r.dmabuf_fd = ubuf;
	reject_expect(&c, EREMOTEIO, "REG_BUFFER of a udmabuf");
}

void t_reject_outside_bar(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.dmabuf_fd =
		texp_export_ok(slot_off(SLOT_REJECT), MiB, 0, TEXP_OUTSIDE_BAR);
	reject_expect(
		&c, EREMOTEIO,
		"REG_BUFFER of a dma-buf whose addresses are past the BAR");
	/* Only the last of several segments outside: still rejected. */
	c.r.dmabuf_fd = texp_export_ok(slot_off(SLOT_REJECT), MiB, 256 * KiB,
				       TEXP_OUTSIDE_BAR | TEXP_REVERSE);
	reject_expect(&c, EREMOTEIO,
		      "REG_BUFFER of a 4-segment dma-buf past the BAR");
}

void t_reject_noroute(void)
{
	struct reject_ctx c;
	int fd;

	if (!lab.noroute_path)
		skip("%s", lab.noroute_why);
	fd = open(lab.noroute_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", lab.noroute_path, errname(errno));
	reject_setup(&c);
	c.r.storage_fd = fd;
	reject_expect(&c, EREMOTEIO,
		      "REG_BUFFER for a drive without a P2P route");
}

void t_reject_tmpfs(void)
{
	struct reject_ctx c;

	reject_setup(&c);
	c.r.storage_fd = tmpfs_file();
	reject_expect(&c, ENOTBLK, "REG_BUFFER for a file on tmpfs");
}

void t_reject_enospc(void)
{
	struct reject_ctx c;
	unsigned int max = lab.query.max_buffers, i;
	uint64_t tokens[1024];
	int ret;

	if (max > 1024)
		skip("max_buffers %u too large for this test", max);
	reject_setup(&c);
	c.r.size = PAGE;
	for (i = 0; i < max; i++) {
		c.r.dmabuf_offset = i * PAGE;
		ret = fgds_reg_args(c.dev, &c.r);
		if (ret)
			fail("REG_BUFFER #%u of max_buffers %u: %s", i + 1, max,
			     errname(-ret));
		tokens[i] = c.r.token;
	}
	c.r.dmabuf_offset = max * PAGE;
	expect_err(fgds_reg_args(c.dev, &c.r), ENOSPC,
		   "REG_BUFFER beyond max_buffers");
	/* The limit is per open file. */
	{
		int dev2 = fgds_open();

		ret = fgds_reg_args(dev2, &c.r);
		if (ret)
			fail("REG_BUFFER on a second open file while the first is full: %s",
			     errname(-ret));
		close(dev2);
	}
	/* A slot freed is usable again. */
	ret = fgds_unreg(c.dev, tokens[0]);
	if (ret)
		fail("UNREG_BUFFER: %s", errname(-ret));
	ret = fgds_reg_args(c.dev, &c.r);
	if (ret)
		fail("REG_BUFFER after an UNREG_BUFFER freed a slot: %s",
		     errname(-ret));
}

void t_reject_e2big(void)
{
	struct reject_ctx c;
	uint64_t max = lab.query.max_buffer_size;

	if (max + PAGE > lab.info.bar_size)
		skip("max_buffer_size %#llx leaves no room in a %#llx BAR",
		     (unsigned long long)max,
		     (unsigned long long)lab.info.bar_size);
	reject_setup(&c);
	c.r.dmabuf_fd = texp_export_ok(0, max + PAGE, 0, 0);
	c.r.size = max + PAGE;
	reject_expect(&c, E2BIG, "REG_BUFFER of max_buffer_size + 4 KiB");
	/* max_buffer_size itself is allowed. */
	c.r.size = max;
	if (fgds_reg_args(c.dev, &c.r))
		fail("REG_BUFFER of exactly max_buffer_size: %s",
		     errname(errno));
}

void t_reject_revoked_dmabuf(void)
{
	struct reject_ctx c;
	int ret;

	reject_setup(&c);
	ret = texp_revoke(c.dmabuf);
	if (ret)
		fail("exporter REVOKE: %s", errname(-ret));
	ret = fgds_reg_args(c.dev, &c.r);
	if (!ret)
		fail("REG_BUFFER of a revoked dma-buf succeeded");
	info("REG_BUFFER of a revoked dma-buf: %s", errname(-ret));
	if (sysfs_registrations() != 0)
		fail("a rejected REG_BUFFER left a registration");
}
