// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_memory.c
 *
 * The memory model of the BAR's pages (kmod/fgds_pages.c): the kernel
 * treats them as peer-to-peer MMIO, so they are mapped uncached, no
 * long-term pin (io_uring fixed buffer, vmsplice) can be taken on them,
 * and block I/O reaches them only from a device with a P2P route, whatever
 * storage the registration named.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "klt.h"

#define PAT_LIST "/sys/kernel/debug/x86/pat_memtype_list"

/*
 * The memory type the kernel recorded for the BAR (x86 PAT) must be
 * uncached. P2PDMA pages ask for it; GENERIC ones ask for write-back,
 * which x86 downgrades to "uncached-minus" only where the firmware's MTRRs
 * mark the range uncached (QEMU's do for MMIO), so this guards the result
 * rather than telling the two page types apart.
 */
void t_pages_uncached(void)
{
	uint64_t bar = lab.query.bar_start;
	int dev = fgds_open();
	char line[256], type[64] = "";
	struct gbuf g;
	FILE *f;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_FIXED), 2 * MiB, 0, 0);
	touch_read(g.map); /* the pages exist and one is mapped */
	f = fopen(PAT_LIST, "r");
	if (!f)
		fail("%s: %s (the lab kernel has PAT and debugfs)", PAT_LIST,
		     errname(errno));
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		char t[64];

		if (sscanf(line, "PAT: [mem 0x%" SCNx64 "-0x%" SCNx64 "] %63s",
			   &start, &end, t) == 3 &&
		    start <= bar && bar < end)
			snprintf(type, sizeof(type), "%s", t);
	}
	fclose(f);
	gbuf_teardown(&g);
	close(dev);
	if (!type[0])
		fail("no PAT entry covers the BAR at %#" PRIx64, bar);
	info("the BAR's kernel mapping is %s", type);
	if (strcmp(type, "uncached-minus") && strcmp(type, "uncached"))
		fail("the kernel maps the BAR's pages %s: CPU accesses to MMIO through a cacheable mapping",
		     type);
}

/*
 * A long-term pin outlives the mapping and cannot be revoked, so an
 * exporter's free would wait for its owner: GUP must refuse it.
 */
void t_longterm_pin_refused(void)
{
	struct iovec iov;
	struct io_uring ring;
	int dev = fgds_open(), pipefd[2], ret;
	struct gbuf g;
	ssize_t n;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_FIXED), 2 * MiB, 0, 0);
	read_full(lab.raw_dfd, g.map, 2 * MiB, 0,
		  "O_DIRECT read into the mapping");

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret)
		fail("io_uring_queue_init: %s", errname(-ret));
	iov.iov_base = g.map;
	iov.iov_len = 2 * MiB;
	ret = io_uring_register_buffers(&ring, &iov, 1);
	if (!ret)
		fail("io_uring registered the mapping as a fixed buffer: a long-term pin fgds cannot revoke");
	info("io_uring_register_buffers on the mapping: %s", errname(-ret));
	io_uring_queue_exit(&ring);

	if (pipe(pipefd))
		fail("pipe: %s", errname(errno));
	iov.iov_len = 64 * KiB;
	n = vmsplice(pipefd[1], &iov, 1, SPLICE_F_NONBLOCK);
	if (n >= 0)
		fail("vmsplice took %zd bytes of the mapping into a pipe: a pin that lives as long as the pipe",
		     n);
	info("vmsplice of the mapping: %s", errname(errno));
	close(pipefd[0]);
	close(pipefd[1]);

	gbuf_teardown(&g);
	close(dev);
}

/*
 * The registration names the raw drive (it has a route), then O_DIRECT
 * reads from the drive that has none: the kernel must refuse that bio
 * (it checks every request's device), and the GPU memory stays as it was.
 */
void t_io_unrouted_refused(void)
{
	uint8_t *before = xmalloc_aligned(64 * KiB);
	int dev, fd;
	struct gbuf g;
	ssize_t n;

	if (!lab.noroute_path)
		skip("%s", lab.noroute_why);
	dev = fgds_open();
	fd = open(lab.noroute_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", lab.noroute_path, errname(errno));
	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_FIXED), 2 * MiB, 0, 0);
	fill_pattern(before, 64 * KiB, 0x6e6f726f757465);
	memcpy(g.map, before, 64 * KiB);
	n = pread(fd, g.map, 64 * KiB, 0);
	if (n >= 0)
		fail("O_DIRECT read from %s (no P2P route to the GPU) into the mapping transferred %zd bytes",
		     lab.noroute_path, n);
	info("O_DIRECT read from the drive without a route: %s",
	     errname(errno));
	expect_same(g.map, before, 64 * KiB,
		    "GPU memory after the refused read");
	gbuf_teardown(&g);
	close(fd);
	close(dev);
	free(before);
}
