// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_io.c
 *
 * Data path: O_DIRECT pread/pwrite and io_uring between the emulated NVMe
 * drives and the mapped BAR, every byte verified against a transfer through
 * normal memory. hostcheck also leaves evidence for the host to verify.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "klt.h"

/* Reads disk [doff, +len) into the mapping at moff and verifies it. */
static void verified_read(int dfd, int bfd, uint8_t *map, uint64_t moff,
			  uint64_t doff, size_t len, const char *what)
{
	uint8_t *want = xmalloc_aligned(len);
	char msg[160];

	read_full(bfd, want, len, doff, "buffered reference read");
	fill_inverse(map + moff, want, len);
	snprintf(msg, sizeof(msg),
		 "%s: O_DIRECT pread %zu at disk %#llx to map +%#llx", what,
		 len, (unsigned long long)doff, (unsigned long long)moff);
	read_full(dfd, map + moff, len, doff, msg);
	expect_same(map + moff, want, len, msg);
	free(want);
}

/* Writes the mapping at moff to disk [doff, +len) and verifies it. */
static void verified_write(int dfd, uint8_t *map, uint64_t moff, uint64_t doff,
			   size_t len, uint64_t seed, const char *what)
{
	uint8_t *want = xmalloc_aligned(len), *back = xmalloc_aligned(len);
	char msg[160];

	fill_pattern(want, len, seed);
	memcpy(map + moff, want, len);
	/* Make sure the disk does not already hold the pattern. */
	fill_inverse(back, want, len);
	write_full(dfd, back, len, doff, "poisoning the target range");
	snprintf(msg, sizeof(msg),
		 "%s: O_DIRECT pwrite %zu from map +%#llx to disk %#llx", what,
		 len, (unsigned long long)moff, (unsigned long long)doff);
	write_full(dfd, map + moff, len, doff, msg);
	memset(back, 0, len);
	read_full(dfd, back, len, doff,
		  "O_DIRECT read back into normal memory");
	expect_same(back, want, len, msg);
	free(want);
	free(back);
}

static const size_t io_sizes[] = { 4 * KiB, 64 * KiB, MiB, 8 * MiB };

void t_io_raw_read(void)
{
	int dev = fgds_open();
	uint64_t area = lab.raw_scratch_off; /* readable: [0, scratch) */
	struct gbuf g;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_RAW), SLOT_SIZE, 0, 0);
	for (size_t i = 0; i < sizeof(io_sizes) / sizeof(io_sizes[0]); i++) {
		size_t len = io_sizes[i];
		uint64_t doffs[] = { 0, 7 * PAGE, MiB + 3 * PAGE,
				     area - len - 5 * PAGE };
		uint64_t moffs[] = { 0, PAGE, SLOT_SIZE - len - 2 * PAGE,
				     (SLOT_SIZE - len) / 2 & ~(PAGE - 1) };

		for (size_t j = 0; j < 4; j++)
			verified_read(lab.raw_dfd, lab.raw_fd, g.map, moffs[j],
				      doffs[j], len, "raw read");
	}
	gbuf_teardown(&g);
}

void t_io_raw_write(void)
{
	int dev = fgds_open();
	uint64_t scratch = lab.raw_scratch_off + SCRATCH_RAW_WRITE;
	struct gbuf g;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_RAW), SLOT_SIZE, 0, 0);
	for (size_t i = 0; i < sizeof(io_sizes) / sizeof(io_sizes[0]); i++) {
		size_t len = io_sizes[i];

		verified_write(lab.raw_dfd, g.map, (i * 3 + 1) * PAGE,
			       scratch + i * PAGE, len, 100 + i, "raw write");
		verified_write(lab.raw_dfd, g.map, SLOT_SIZE - len,
			       scratch + 16 * MiB - len, len, 200 + i,
			       "raw write at the end");
	}
	gbuf_teardown(&g);
}

void t_io_ext4_read(void)
{
	int dev = fgds_open();
	int dfd = open(lab.ext4_file, O_RDONLY | O_DIRECT | O_CLOEXEC);
	int bfd = open(lab.ext4_file, O_RDONLY | O_CLOEXEC);
	struct gbuf g;
	off_t fsize;

	if (dfd < 0 || bfd < 0)
		fail("open %s: %s", lab.ext4_file, errname(errno));
	fsize = lseek(bfd, 0, SEEK_END);
	if (fsize < (off_t)(9 * MiB))
		fail("%s is only %lld bytes", lab.ext4_file, (long long)fsize);
	gbuf_setup(&g, dev, dfd, slot_off(SLOT_EXT4), SLOT_SIZE, 0, 0);
	for (size_t i = 0; i < sizeof(io_sizes) / sizeof(io_sizes[0]); i++) {
		size_t len = io_sizes[i];
		uint64_t end = ((uint64_t)fsize - len) & ~(PAGE - 1);

		verified_read(dfd, bfd, g.map, 0, 0, len, "ext4 read");
		verified_read(dfd, bfd, g.map, 3 * PAGE,
			      5 * PAGE + (end / 3 & ~(PAGE - 1)), len,
			      "ext4 read");
		verified_read(dfd, bfd, g.map, SLOT_SIZE - len, end, len,
			      "ext4 read at the end");
	}
	gbuf_teardown(&g);
}

void t_io_ext4_write(void)
{
	int dev = fgds_open();
	char path[256];
	struct gbuf g;
	int dfd;

	snprintf(path, sizeof(path), "%s/klt-scratch.bin", lab.ext4_dir);
	dfd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC,
		   0644);
	if (dfd < 0)
		fail("create %s: %s", path, errname(errno));
	if (fallocate(dfd, 0, 0, 16 * MiB))
		fail("fallocate %s: %s", path, errname(errno));
	gbuf_setup(&g, dev, dfd, slot_off(SLOT_EXT4), SLOT_SIZE, 0, 0);
	for (size_t i = 0; i < sizeof(io_sizes) / sizeof(io_sizes[0]); i++) {
		size_t len = io_sizes[i];

		verified_write(dfd, g.map, (5 + i) * PAGE, i * 2 * PAGE, len,
			       300 + i, "ext4 write");
	}
	/* Extending the file from the BAR, past its allocated blocks. */
	verified_write(dfd, g.map, 0, 16 * MiB, MiB, 400,
		       "ext4 write extending");
	if (fsync(dfd))
		fail("fsync: %s", errname(errno));
	gbuf_teardown(&g);
	close(dfd);
	unlink(path);
}

/*
 * Segments in reverse physical order: the registration's byte L lies in
 * sg entry s = L / seg, which the exporter placed at physical segment
 * n - 1 - s. A plain registration of the same BAR range sees the physical
 * layout and proves every byte landed where the extents say.
 */
static void reverse_case(int dev, uint64_t seg, uint64_t size)
{
	uint64_t bar = slot_off(SLOT_REVERSE), n = (size + seg - 1) / seg;
	size_t len = 3 * MiB + 5 * PAGE;
	uint64_t moff = seg / 2 + PAGE, doff = 2 * MiB;
	uint8_t *want = xmalloc_aligned(len);
	struct gbuf rev, plain;
	char what[96];

	snprintf(what, sizeof(what),
		 "reverse export, %llu segments of %llu KiB",
		 (unsigned long long)n, (unsigned long long)(seg / KiB));
	if (size % seg)
		fail("test bug: size not a multiple of seg");
	gbuf_setup(&rev, dev, lab.raw_fd, bar, size, seg, TEXP_REVERSE);
	gbuf_setup(&plain, dev, lab.raw_fd, bar, size, 0, 0);
	verified_read(lab.raw_dfd, lab.raw_fd, rev.map, moff, doff, len, what);
	read_full(lab.raw_fd, want, len, doff, "reference read");
	for (uint64_t l = moff; l < moff + len; l += PAGE) {
		uint64_t phys = (n - 1 - l / seg) * seg + l % seg;

		if (memcmp(plain.map + phys, want + (l - moff), PAGE))
			fail("%s: byte %#llx of the registration is not at BAR +%#llx",
			     what, (unsigned long long)l,
			     (unsigned long long)(bar + phys));
	}
	/* And the other way: a write from the reversed mapping. */
	verified_write(lab.raw_dfd, rev.map, seg - PAGE,
		       lab.raw_scratch_off + SCRATCH_RAW_WRITE, 2 * seg,
		       500 + seg, what);
	gbuf_teardown(&plain);
	gbuf_teardown(&rev);
	free(want);
}

void t_io_reverse(void)
{
	int dev = fgds_open();

	reverse_case(dev, MiB, 8 * MiB);
	reverse_case(dev, 64 * KiB, 8 * MiB);
	reverse_case(dev, 2 * MiB, 16 * MiB);
}

/*
 * I/O that crosses a 2 MiB boundary of the BAR. fgds creates struct pages
 * per 2 MiB section, each with its own dev_pagemap, and newer kernels
 * (7.x: iov_iter_extract_bvecs) end a bio where the pgmap changes: the
 * block device's single-bio O_DIRECT paths then return a short count,
 * which a synchronous read silently completes through the page cache (a
 * CPU copy, no P2P) and io_uring returns to the caller. Both are checked:
 * full length from io_uring, and no page-cache fallback for pread.
 */
static long cached_pages(uint64_t doff, size_t len)
{
	unsigned char vec[len / PAGE];
	long n = 0;
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, lab.raw_fd, doff);

	if (p == MAP_FAILED)
		fail("mmap of the raw device: %s", errname(errno));
	if (mincore(p, len, vec))
		fail("mincore: %s", errname(errno));
	munmap(p, len);
	for (size_t i = 0; i < len / PAGE; i++)
		n += vec[i] & 1;
	return n;
}

static void drop_cache(uint64_t doff, size_t len)
{
	posix_fadvise(lab.raw_fd, doff, len, POSIX_FADV_DONTNEED);
	if (cached_pages(doff, len))
		skip("cannot drop the raw device's page cache for [%#llx, +%#zx)",
		     (unsigned long long)doff, len);
}

void t_io_section_cross(void)
{
	int dev = fgds_open();
	const size_t len = MiB;
	uint64_t bar = slot_off(SLOT_RAW); /* 2 MiB aligned */
	uint64_t moff = 2 * MiB - len / 2, doff = 50 * MiB;
	uint8_t *want = xmalloc_aligned(len);
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct gbuf g;
	long cached;

	gbuf_setup(&g, dev, lab.raw_fd, bar, 4 * MiB, 0, 0);
	/* The reference goes through O_DIRECT too, to keep the cache empty. */
	read_full(lab.raw_dfd, want, len, doff, "O_DIRECT reference read");
	drop_cache(doff, len);
	fill_inverse(g.map + moff, want, len);
	read_full(lab.raw_dfd, g.map + moff, len, doff,
		  "O_DIRECT pread across a 2 MiB boundary of the BAR");
	expect_same(g.map + moff, want, len,
		    "O_DIRECT pread across a 2 MiB boundary of the BAR");
	cached = cached_pages(doff, len);
	if (cached)
		fail("O_DIRECT pread of 1 MiB across a 2 MiB boundary of the BAR left %ld of %zu pages in the page cache: the kernel completed it as a buffered read (CPU copy, no P2P)",
		     cached, (size_t)(len / PAGE));

	if (io_uring_queue_init(4, &ring, 0))
		fail("io_uring_queue_init failed");
	fill_inverse(g.map + moff, want, len);
	io_uring_prep_read(io_uring_get_sqe(&ring), lab.raw_dfd, g.map + moff,
			   len, doff);
	io_uring_submit(&ring);
	if (io_uring_wait_cqe(&ring, &cqe))
		fail("io_uring_wait_cqe failed");
	if (cqe->res != (int)len)
		fail("io_uring READ of 1 MiB across a 2 MiB boundary of the BAR: %d (%s), want %zu",
		     cqe->res, cqe->res < 0 ? errname(-cqe->res) : "short",
		     len);
	io_uring_cqe_seen(&ring, cqe);
	expect_same(g.map + moff, want, len,
		    "io_uring READ across a 2 MiB boundary of the BAR");
	io_uring_queue_exit(&ring);
	gbuf_teardown(&g);
	free(want);
}

/* ---------------------------------------------------------- io_uring */

#define QD 32

static void ring_init(struct io_uring *ring)
{
	int ret = io_uring_queue_init(QD, ring, 0);

	if (ret)
		fail("io_uring_queue_init: %s", errname(-ret));
}

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		fail("io_uring: no free SQE");
	return sqe;
}

/* Submits what is queued and reaps n completions, each of want[i] bytes. */
static void ring_run(struct io_uring *ring, unsigned int n, const size_t *want,
		     const char *what)
{
	int ret = io_uring_submit(ring);

	if (ret != (int)n)
		fail("%s: io_uring_submit returned %d (%s), want %u", what, ret,
		     ret < 0 ? errname(-ret) : "short", n);
	for (unsigned int i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		uint64_t idx;

		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			fail("%s: io_uring_wait_cqe: %s", what, errname(-ret));
		idx = cqe->user_data;
		if (cqe->res != (int)want[idx])
			fail("%s: request %llu completed with %d (%s), want %zu",
			     what, (unsigned long long)idx, cqe->res,
			     cqe->res < 0 ? errname(-cqe->res) : "short",
			     want[idx]);
		io_uring_cqe_seen(ring, cqe);
	}
}

/*
 * QD reads of 64-256 KiB at random disk offsets into disjoint 512 KiB
 * pieces of the mapping, all in flight together; four rounds.
 */
void t_io_uring_read(void)
{
	int dev = fgds_open();
	const uint64_t piece = 512 * KiB;
	struct io_uring ring;
	struct gbuf g;
	uint8_t *want = xmalloc_aligned(QD * piece);
	uint64_t doff[QD];
	size_t len[QD];

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_URING), SLOT_SIZE, 0, 0);
	ring_init(&ring);
	for (int round = 0; round < 4; round++) {
		for (unsigned int i = 0; i < QD; i++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);

			len[i] = (16 + rnd() % 49) * PAGE;
			doff[i] = rnd() %
				  ((lab.raw_scratch_off - len[i]) / PAGE) *
				  PAGE;
			read_full(lab.raw_fd, want + i * piece, len[i], doff[i],
				  "buffered reference read");
			fill_inverse(g.map + i * piece, want + i * piece,
				     len[i]);
			io_uring_prep_read(sqe, lab.raw_dfd, g.map + i * piece,
					   len[i], doff[i]);
			sqe->user_data = i;
		}
		ring_run(&ring, QD, len, "io_uring READ");
		for (unsigned int i = 0; i < QD; i++)
			expect_same(g.map + i * piece, want + i * piece, len[i],
				    "io_uring READ into the mapping");
	}
	io_uring_queue_exit(&ring);
	gbuf_teardown(&g);
}

void t_io_uring_write(void)
{
	int dev = fgds_open();
	const uint64_t piece = 256 * KiB;
	uint64_t scratch = lab.raw_scratch_off + SCRATCH_URING_WRITE;
	uint8_t *want = xmalloc_aligned(QD * piece);
	uint8_t *back = xmalloc_aligned(QD * piece);
	struct io_uring ring;
	struct gbuf g;
	size_t len[QD];

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_URING), SLOT_SIZE, 0, 0);
	ring_init(&ring);
	/* Poison the 8 MiB target so stale data cannot pass. */
	memset(back, 0xee, QD * piece);
	write_full(lab.raw_dfd, back, QD * piece, scratch, "poisoning scratch");
	fill_pattern(want, QD * piece, 600);
	for (unsigned int i = 0; i < QD; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		/* mapping pieces in reverse order, so source != target order */
		uint64_t moff = (QD - 1 - i) * piece + 4 * MiB;

		len[i] = piece;
		memcpy(g.map + moff, want + i * piece, piece);
		io_uring_prep_write(sqe, lab.raw_dfd, g.map + moff, piece,
				    scratch + i * piece);
		sqe->user_data = i;
	}
	ring_run(&ring, QD, len, "io_uring WRITE");
	read_full(lab.raw_dfd, back, QD * piece, scratch, "O_DIRECT read back");
	expect_same(back, want, QD * piece, "io_uring WRITE from the mapping");
	io_uring_queue_exit(&ring);
	gbuf_teardown(&g);
}

/* READV: each request scatters into 3 non-adjacent pieces of the mapping. */
void t_io_uring_readv(void)
{
	int dev = fgds_open();
	const uint64_t part = 64 * KiB;
	struct iovec iov[QD][3];
	uint8_t *want = xmalloc_aligned(QD * 3 * part);
	struct io_uring ring;
	struct gbuf g;
	size_t len[QD];

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_URING), SLOT_SIZE, 0, 0);
	ring_init(&ring);
	for (unsigned int i = 0; i < QD; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);
		uint64_t doff = (uint64_t)i * 5 * part + PAGE;

		read_full(lab.raw_fd, want + i * 3 * part, 3 * part, doff,
			  "buffered reference read");
		/* part k of request i goes to piece (2 - k) * QD + i */
		for (int k = 0; k < 3; k++) {
			iov[i][k].iov_base = g.map + ((2 - k) * QD + i) * part;
			iov[i][k].iov_len = part;
			fill_inverse(iov[i][k].iov_base,
				     want + (i * 3 + k) * part, part);
		}
		len[i] = 3 * part;
		io_uring_prep_readv(sqe, lab.raw_dfd, iov[i], 3, doff);
		sqe->user_data = i;
	}
	ring_run(&ring, QD, len, "io_uring READV");
	for (unsigned int i = 0; i < QD; i++)
		for (int k = 0; k < 3; k++)
			expect_same(iov[i][k].iov_base,
				    want + (i * 3 + k) * part, part,
				    "io_uring READV into the mapping");
	io_uring_queue_exit(&ring);
	gbuf_teardown(&g);
}

static void hostcheck_ext4(int dev, uint64_t bar, uint64_t len, uint64_t foff)
{
	int dfd = open(lab.ext4_file, O_RDONLY | O_DIRECT | O_CLOEXEC);
	int bfd = open(lab.ext4_file, O_RDONLY | O_CLOEXEC);
	struct gbuf g;

	if (dfd < 0 || bfd < 0)
		fail("open %s: %s", lab.ext4_file, errname(errno));
	gbuf_setup(&g, dev, dfd, bar, len, 0, 0);
	verified_read(dfd, bfd, g.map, 0, foff, len, "hostcheck ext4 read");
	dprintf(STDOUT_FILENO,
		"HOSTCHECK bar_off=%#llx src=ext4file src_off=%#llx len=%#llx\n",
		(unsigned long long)bar, (unsigned long long)foff,
		(unsigned long long)len);
	gbuf_teardown(&g);
	close(dfd);
	close(bfd);
}

/*
 * The last 16 MiB of the BAR belong to this test. Reads land there and
 * stay until QEMU exits; the lab then compares the memory-backend file
 * with the disk image for every HOSTCHECK line.
 */
void t_hostcheck(void)
{
	int dev = fgds_open();
	uint64_t bar = hostcheck_off();
	uint64_t scratch = lab.raw_scratch_off + SCRATCH_HOSTCHECK;
	struct {
		uint64_t moff, doff, len;
	} rd[] = {
		{ 0, 0, 4 * KiB },
		{ 64 * KiB, 3 * MiB + 8 * KiB, MiB },
		{ 2 * MiB, 17 * MiB, 8 * MiB },
		{ 11 * MiB, 40 * MiB + 4 * KiB, 64 * KiB },
	};
	const uint64_t wr_moff = 12 * MiB, wr_len = 4 * MiB;
	struct gbuf g;

	gbuf_setup(&g, dev, lab.raw_fd, bar, SLOT_SIZE, 0, 0);
	for (size_t i = 0; i < sizeof(rd) / sizeof(rd[0]); i++) {
		if (rd[i].doff + rd[i].len > lab.raw_scratch_off)
			fail("test bug: raw disk too small for hostcheck");
		verified_read(lab.raw_dfd, lab.raw_fd, g.map, rd[i].moff,
			      rd[i].doff, rd[i].len, "hostcheck read");
		dprintf(STDOUT_FILENO,
			"HOSTCHECK bar_off=%#llx src=raw src_off=%#llx len=%#llx\n",
			(unsigned long long)(bar + rd[i].moff),
			(unsigned long long)rd[i].doff,
			(unsigned long long)rd[i].len);
	}
	/* [10 MiB, 11 MiB) from the ext4 file, through its own registration */
	hostcheck_ext4(dev, bar + 10 * MiB, MiB, 5 * MiB + 4 * KiB);
	verified_write(lab.raw_dfd, g.map, wr_moff, scratch, wr_len, 700,
		       "hostcheck write");
	if (fsync(lab.raw_dfd))
		fail("fsync: %s", errname(errno));
	dprintf(STDOUT_FILENO,
		"HOSTCHECK-DISK raw_off=%#llx bar_off=%#llx len=%#llx\n",
		(unsigned long long)scratch,
		(unsigned long long)(bar + wr_moff),
		(unsigned long long)wr_len);
	gbuf_teardown(&g);
}

/* ------------------------------------------------- many buffers, threads */

#define NTHREADS 8

struct tm_arg {
	int idx;
	int dev;
	char err[256];
};

/* Each thread: own dma-buf and registration, 24 verified random reads. */
static void *tm_thread(void *p)
{
	struct tm_arg *a = p;
	const uint64_t size = MiB;
	uint64_t bar = slot_off(SLOT_THREADS) + a->idx * size, token;
	uint8_t *want = xmalloc_aligned(size), *map;
	int dmabuf = texp_export(bar, size, 0, 0), ret, err;

	if (dmabuf < 0) {
		snprintf(a->err, sizeof(a->err), "EXPORT: %s",
			 errname(-dmabuf));
		return NULL;
	}
	ret = fgds_reg(a->dev, dmabuf, lab.raw_fd, 0, size, &token);
	close(dmabuf);
	if (ret) {
		snprintf(a->err, sizeof(a->err), "REG_BUFFER: %s",
			 errname(-ret));
		return NULL;
	}
	map = fgds_mmap(a->dev, token, size, MAP_SHARED, &err);
	if (!map) {
		snprintf(a->err, sizeof(a->err), "mmap: %s", errname(err));
		return NULL;
	}
	for (int i = 0; i < 24; i++) {
		size_t len = (1 + rnd() % 64) * 4 * KiB;
		uint64_t moff = rnd() % ((size - len) / PAGE + 1) * PAGE;
		uint64_t doff =
			rnd() % ((lab.raw_scratch_off - len) / PAGE) * PAGE;
		ssize_t n;

		if (pread(lab.raw_fd, want, len, doff) != (ssize_t)len) {
			snprintf(a->err, sizeof(a->err),
				 "reference read failed");
			return NULL;
		}
		fill_inverse(map + moff, want, len);
		n = pread(lab.raw_dfd, map + moff, len, doff);
		if (n != (ssize_t)len) {
			snprintf(a->err, sizeof(a->err),
				 "O_DIRECT pread %zu at %#llx: %zd (%s)", len,
				 (unsigned long long)doff, n,
				 n < 0 ? errname(errno) : "short");
			return NULL;
		}
		if (memcmp(map + moff, want, len)) {
			snprintf(
				a->err, sizeof(a->err),
				"data mismatch, read %zu at disk %#llx to map +%#llx",
				len, (unsigned long long)doff,
				(unsigned long long)moff);
			return NULL;
		}
	}
	munmap(map, size);
	ret = fgds_unreg(a->dev, token);
	if (ret)
		snprintf(a->err, sizeof(a->err), "UNREG_BUFFER: %s",
			 errname(-ret));
	free(want);
	return NULL;
}

/* Threads 0-3 share one open file, threads 4-7 have their own. */
void t_threads_many(void)
{
	pthread_t th[NTHREADS];
	struct tm_arg args[NTHREADS];
	int shared = fgds_open();
	long regs;

	for (int i = 0; i < NTHREADS; i++) {
		args[i] =
			(struct tm_arg){ .idx = i,
					 .dev = i < 4 ? shared : fgds_open() };
		if (pthread_create(&th[i], NULL, tm_thread, &args[i]))
			fail("pthread_create failed");
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NTHREADS; i++)
		if (args[i].err[0])
			fail("thread %d: %s", i, args[i].err);
	regs = wait_registrations(0, 5000);
	if (regs != 0)
		fail("registrations %ld after all threads unregistered", regs);
}
