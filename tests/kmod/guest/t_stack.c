// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_stack.c
 *
 * Stacked block devices between the GPU memory and the drives: a
 * dm-linear device (an ext4 filesystem on it) and an md raid0 array, both
 * over the fgds-stack drive, which has a P2P route to the "GPU"; the array
 * also over fgds-noroute, which has none. A stack has no PCI parent of its
 * own: fgds accepts it only when its queue takes P2PDMA pages, and then the
 * member drivers check each request's route (kmod/fgds_p2p.c). Whatever the
 * kernel decides, I/O through a stack must either land the right bytes in
 * the GPU memory or be refused with nothing written there, and never reach
 * it from a member without a route.
 *
 * The stacks are made with the kernel's own ioctls (device-mapper's, and
 * md's for arrays without a superblock, as `mdadm --build`), so the guest
 * needs no dmsetup or mdadm; nothing is written to the drives.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include <linux/major.h> /* MD_MAJOR, for md_u.h's ioctl numbers */
#include <linux/raid/md_p.h>
#include <linux/raid/md_u.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "klt.h"

#define DM_NAME "fgds-lab-linear"
#define DM_MOUNT "/tmp/klt-dm"
#define MD_NAME "md9" /* /dev/md9 */
#define MD_CHUNK (64 * KiB)
#define MARK_SEED 0x737461636bULL

/* ---- making and removing the stacks --------------------------------- */

static void wait_node(const char *path)
{
	for (int i = 0; i < 100; i++) {
		if (!access(path, F_OK))
			return;
		usleep(50 * 1000);
	}
	fail("%s did not appear within 5 s", path);
}

static dev_t block_dev_of(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		fail("stat %s: %s", path, errname(errno));
	if (!S_ISBLK(st.st_mode))
		fail("%s is not a block device", path);
	return st.st_rdev;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static void dm_init(struct dm_ioctl *io, size_t size)
{
	memset(io, 0, size);
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = size;
	io->data_start = sizeof(*io);
	snprintf(io->name, sizeof(io->name), "%s", DM_NAME);
}

static int dm_control(void)
{
	int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fail("open /dev/mapper/control: %s (CONFIG_BLK_DEV_DM in the guest kernel?)",
		     errname(errno));
	return fd;
}

static void dm_remove(void)
{
	struct dm_ioctl io;
	int ctl = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);

	if (ctl < 0)
		return;
	dm_init(&io, sizeof(io));
	ioctl(ctl, DM_DEV_REMOVE, &io); /* ENXIO when there is none */
	close(ctl);
}

/*
 * A dm-linear device over @under from @start for @len bytes; writes its
 * node (/dev/dm-N) into @node.
 */
static void dm_create_linear(const char *under, uint64_t start, uint64_t len,
			     char *node, size_t node_len)
{
	union {
		struct dm_ioctl io;
		char bytes[sizeof(struct dm_ioctl) +
			   sizeof(struct dm_target_spec) + 128];
	} buf;
	struct dm_target_spec *spec;
	dev_t dev = block_dev_of(under);
	int ctl = dm_control();

	dm_remove(); /* a leftover of an earlier, failed run */
	dm_init(&buf.io, sizeof(buf.io));
	if (ioctl(ctl, DM_DEV_CREATE, &buf.io))
		fail("DM_DEV_CREATE %s: %s", DM_NAME, errname(errno));

	dm_init(&buf.io, sizeof(buf));
	buf.io.target_count = 1;
	spec = (struct dm_target_spec *)(buf.bytes + sizeof(buf.io));
	spec->sector_start = 0;
	spec->length = len / 512;
	snprintf(spec->target_type, sizeof(spec->target_type), "linear");
	snprintf((char *)(spec + 1), 128, "%u:%u %" PRIu64, major(dev),
		 minor(dev), start / 512);
	spec->next = sizeof(*spec) + 128;
	if (ioctl(ctl, DM_TABLE_LOAD, &buf.io))
		fail("DM_TABLE_LOAD linear %u:%u: %s", major(dev), minor(dev),
		     errname(errno));
	/* Resume: the loaded table goes live. */
	dm_init(&buf.io, sizeof(buf.io));
	if (ioctl(ctl, DM_DEV_SUSPEND, &buf.io))
		fail("DM_DEV_SUSPEND (resume) %s: %s", DM_NAME, errname(errno));
	close(ctl);
	snprintf(node, node_len, "/dev/dm-%u", minor(buf.io.dev));
	wait_node(node);
}

/* Stops the array; @strict: fail unless it was running and stopped. */
static void md_stop(bool strict)
{
	int fd = open("/dev/" MD_NAME, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (strict)
			fail("open /dev/" MD_NAME ": %s", errname(errno));
		return;
	}
	if (ioctl(fd, STOP_ARRAY, 0) && strict)
		fail("STOP_ARRAY: %s", errname(errno));
	close(fd);
}

/*
 * An md raid0 array over @n members, chunk MD_CHUNK, without a
 * superblock (nothing is written to the members). Returns its fd, O_DIRECT.
 */
static int md_create_raid0(const char *const *members, int n)
{
	mdu_array_info_t array = { 0 };
	mdu_param_t param = { 0 };
	int fd, ret;

	md_stop(false); /* a leftover of an earlier, failed run */
	ret = write_text("/sys/module/md_mod/parameters/new_array", MD_NAME);
	if (ret && ret != -EEXIST)
		fail("creating %s (md_mod new_array): %s (CONFIG_BLK_DEV_MD in the guest kernel?)",
		     MD_NAME, errname(-ret));
	wait_node("/dev/" MD_NAME);
	fd = open("/dev/" MD_NAME, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fail("open /dev/" MD_NAME ": %s", errname(errno));
	array.level = 0;
	array.nr_disks = n;
	array.raid_disks = n;
	array.active_disks = n;
	array.working_disks = n;
	array.md_minor = 9;
	array.not_persistent = 1;
	array.chunk_size = MD_CHUNK;
	if (ioctl(fd, SET_ARRAY_INFO, &array))
		fail("SET_ARRAY_INFO raid0: %s", errname(errno));
	for (int i = 0; i < n; i++) {
		mdu_disk_info_t disk = { 0 };
		dev_t dev = block_dev_of(members[i]);

		disk.number = i;
		disk.raid_disk = i;
		disk.state = (1 << MD_DISK_SYNC) | (1 << MD_DISK_ACTIVE);
		disk.major = major(dev);
		disk.minor = minor(dev);
		if (ioctl(fd, ADD_NEW_DISK, &disk))
			fail("ADD_NEW_DISK %s: %s", members[i], errname(errno));
	}
	if (ioctl(fd, RUN_ARRAY, &param))
		fail("RUN_ARRAY: %s", errname(errno));
	return fd;
}

static void stack_cleanup(void)
{
	umount2(DM_MOUNT, MNT_DETACH);
	dm_remove();
	md_stop(false);
}

/* ---- checks --------------------------------------------------------- */

/* What the P2P route check answers for @fd (0 or -errno). */
static int route_status(int fd)
{
	struct fgds_query q;
	int dev = fgds_open(), ret;

	memset(&q, 0, sizeof(q));
	q.flags = FGDS_QUERY_STORAGE_FD;
	q.storage_fd = fd;
	ret = fgds_query(dev, &q);
	close(dev);
	if (ret)
		fail("QUERY with a storage fd: %s", errname(-ret));
	return q.p2p_status;
}

/* Fails unless @got is @want, when this kernel's answer is known. */
static void expect_kernel(int known, bool got, const char *what)
{
	info("%s: %s", what, got ? "yes" : "no");
	if (known >= 0 && got != (bool)known)
		fail("%s: %s, but this kernel %s (guest-tests.sh)", what,
		     got ? "yes" : "no",
		     known ? "passes P2PDMA pages through" :
			     "does not pass P2PDMA pages through");
}

static void mark(volatile uint8_t *gpu, uint8_t *copy, size_t len)
{
	fill_pattern(copy, len, MARK_SEED);
	for (size_t i = 0; i < len; i++)
		gpu[i] = copy[i];
}

/*
 * dm-linear over fgds-stack from 1 MiB on, where its ext4 filesystem
 * starts, mounted: the file is readable only through the dm device. Device
 * mapper does not pass P2PDMA pages through (no kernel the lab runs sets
 * BLK_FEAT_PCI_P2PDMA on a dm queue), so fgds refuses a registration for
 * it (EREMOTEIO) and an O_DIRECT read from the file into GPU memory
 * registered for the drive under it is refused too, leaving that memory
 * as it was; the same read into host memory works.
 */
void t_stack_dm_linear(void)
{
	const size_t len = MiB;
	uint8_t *host = xmalloc_aligned(len), *buffered = xmalloc_aligned(len);
	uint8_t *before = xmalloc_aligned(len);
	char node[64], path[256];
	int dev, fd, bfd, sfd, st, ret;
	uint64_t size, token;
	struct gbuf g;
	ssize_t n;

	if (!lab.stack_path || !lab.stack_file)
		skip("no --stack drive");
	klt_on_exit = stack_cleanup;
	sfd = open(lab.stack_path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0 || ioctl(sfd, BLKGETSIZE64, &size))
		fail("%s: %s", lab.stack_path, errname(errno));
	dm_create_linear(lab.stack_path, lab.stack_fs_off,
			 size - lab.stack_fs_off, node, sizeof(node));
	mkdir(DM_MOUNT, 0755);
	if (mount(node, DM_MOUNT, "ext4", MS_RDONLY, NULL))
		fail("mount %s (dm-linear over %s at %#" PRIx64 "): %s", node,
		     lab.stack_path, lab.stack_fs_off, errname(errno));
	snprintf(path, sizeof(path), DM_MOUNT "/%s", lab.stack_file);
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	bfd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || bfd < 0)
		fail("open %s: %s", path, errname(errno));

	/* The stack works: O_DIRECT into host memory reads the file. */
	read_full(fd, host, len, 0,
		  "O_DIRECT read through dm into host memory");
	read_full(bfd, buffered, len, 0, "buffered read through dm");
	expect_same(host, buffered, len,
		    "O_DIRECT vs buffered read through dm");

	st = route_status(fd);
	info("route check for a file on the dm device: %s",
	     st ? errname(-st) : "accepted");
	expect_kernel(lab.dm_p2p, st == 0,
		      "fgds accepts a file on dm-linear for registration");
	if (st && st != -EREMOTEIO)
		fail("route check for a file on dm: %s, want EREMOTEIO",
		     errname(-st));

	dev = fgds_open();
	if (st) {
		int dmabuf = texp_export_ok(slot_off(SLOT_STACK), len, 0, 0);

		ret = fgds_reg(dev, dmabuf, fd, 0, len, &token);
		if (!ret)
			fail("REG_BUFFER for a file on dm succeeded, QUERY said %s",
			     errname(-st));
		expect_err(ret, EREMOTEIO, "REG_BUFFER for a file on dm");
		close(dmabuf);
	}
	/* Registered for the drive under the stack (a route, distance 4). */
	gbuf_setup(&g, dev, sfd, slot_off(SLOT_STACK), len, 0, 0);
	mark(g.map, before, len);
	n = pread(fd, g.map, len, 0);
	info("O_DIRECT read through dm into GPU memory: %zd (%s)", n,
	     n < 0 ? errname(errno) : "ok");
	expect_kernel(lab.dm_p2p, n >= 0,
		      "an O_DIRECT read through dm reaches the GPU memory");
	if (n < 0) {
		if (errno != EREMOTEIO)
			fail("O_DIRECT read through dm into GPU memory: %s, want EREMOTEIO",
			     errname(errno));
		expect_same(g.map, before, len,
			    "GPU memory after the refused read through dm");
	} else {
		if (n != (ssize_t)len)
			fail("O_DIRECT read through dm into GPU memory: %zd of %zu bytes",
			     n, len);
		expect_same(g.map, host, len,
			    "GPU memory after the read through dm");
	}
	gbuf_teardown(&g);
	close(dev);
	close(fd);
	close(bfd);
	close(sfd);
	if (umount(DM_MOUNT))
		fail("umount %s: %s", DM_MOUNT, errname(errno));
	dm_remove();
	klt_on_exit = NULL;
	free(host);
	free(buffered);
	free(before);
}

/*
 * md raid0 over fgds-stack (member 0, a route) and fgds-noroute (member 1,
 * none), 64 KiB chunks: even chunks come from the routed drive, odd ones
 * from the other. Where md passes P2PDMA pages through (7.x: raid0, 1 and
 * 10 set BLK_FEAT_PCI_P2PDMA), fgds accepts the array and the members'
 * drivers decide per request: a chunk of the routed member lands in GPU
 * memory, byte-checked; one of the other member is refused with the errno
 * a direct read from that drive gets, and leaves the GPU memory as it was.
 * Where md does not (6.12), the array is refused at registration and every
 * read through it into GPU memory is refused.
 */
void t_stack_md_raid0(void)
{
	const size_t len = 4 * MD_CHUNK;
	uint8_t *want = xmalloc_aligned(len), *host = xmalloc_aligned(len);
	uint8_t *before = xmalloc_aligned(len);
	const char *members[2];
	int dev, md, sfd, nfd, st, unrouted_err;
	struct gbuf g;
	ssize_t n;

	if (!lab.stack_path)
		skip("no --stack drive");
	if (!lab.noroute_path)
		skip("%s", lab.noroute_why);
	klt_on_exit = stack_cleanup;

	/* What the array holds, read from the members themselves. */
	sfd = open(lab.stack_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	nfd = open(lab.noroute_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (sfd < 0 || nfd < 0)
		fail("open the members: %s", errname(errno));
	for (size_t c = 0; c < len / MD_CHUNK; c++)
		read_full(c % 2 ? nfd : sfd, want + c * MD_CHUNK, MD_CHUNK,
			  c / 2 * MD_CHUNK, "direct read of a member");

	/* The errno of an O_DIRECT read with no route, for comparison. */
	dev = fgds_open();
	gbuf_setup(&g, dev, sfd, slot_off(SLOT_STACK), len, 0, 0);
	n = pread(nfd, g.map, MD_CHUNK, 0);
	if (n >= 0)
		fail("O_DIRECT read from %s (no route) into GPU memory transferred %zd bytes",
		     lab.noroute_path, n);
	unrouted_err = errno;
	gbuf_teardown(&g);
	close(sfd);
	close(nfd);

	members[0] = lab.stack_path;
	members[1] = lab.noroute_path;
	md = md_create_raid0(members, 2);
	read_full(md, host, len, 0,
		  "O_DIRECT read of the array into host memory");
	expect_same(host, want, len, "the array's first chunks vs its members");

	st = route_status(md);
	info("route check for the array: %s", st ? errname(-st) : "accepted");
	expect_kernel(lab.md_p2p, st == 0,
		      "fgds accepts md raid0 for registration");
	if (st && st != -EREMOTEIO)
		fail("route check for the array: %s, want EREMOTEIO",
		     errname(-st));

	/* Registered for the array itself, or else for the routed member. */
	if (st) {
		sfd = open(lab.stack_path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0)
			fail("open %s: %s", lab.stack_path, errname(errno));
		gbuf_setup(&g, dev, sfd, slot_off(SLOT_STACK), len, 0, 0);
		close(sfd);
	} else {
		gbuf_setup(&g, dev, md, slot_off(SLOT_STACK), len, 0, 0);
	}

	/* Chunk 0: on the member with a route. */
	mark(g.map, before, len);
	n = pread(md, g.map, MD_CHUNK, 0);
	info("O_DIRECT read of chunk 0 (routed member) into GPU memory: %zd (%s)",
	     n, n < 0 ? errname(errno) : "ok");
	expect_kernel(lab.md_p2p, n >= 0,
		      "a read through md raid0 reaches the GPU memory");
	if (n >= 0) {
		if (n != (ssize_t)MD_CHUNK)
			fail("read of chunk 0: %zd bytes", n);
		expect_same(g.map, want, MD_CHUNK,
			    "GPU memory after reading chunk 0 of the array");
	} else {
		if (errno != EREMOTEIO)
			fail("read of chunk 0 through md: %s, want EREMOTEIO",
			     errname(errno));
		expect_same(g.map, before, MD_CHUNK,
			    "GPU memory after the refused read through md");
	}

	/* Chunk 1: on the member without a route. Never lands. */
	mark(g.map, before, len);
	n = pread(md, g.map + MD_CHUNK, MD_CHUNK, MD_CHUNK);
	info("O_DIRECT read of chunk 1 (member without a route): %zd (%s)", n,
	     n < 0 ? errname(errno) : "ok");
	if (n >= 0)
		fail("a read of the array's chunk on %s (no route) into GPU memory transferred %zd bytes",
		     lab.noroute_path, n);
	if (errno != EREMOTEIO && errno != unrouted_err)
		fail("read of chunk 1 through md: %s, want EREMOTEIO or %s (a direct unrouted read's)",
		     errname(errno), errname(unrouted_err));
	expect_same(g.map, before, len,
		    "GPU memory after the refused read of chunk 1");

	/* All four chunks at once: refused, and no odd chunk ever lands. */
	mark(g.map, before, len);
	n = pread(md, g.map, len, 0);
	info("O_DIRECT read of chunks 0-3 (both members): %zd (%s)", n,
	     n < 0 ? errname(errno) : "ok");
	if (n >= (ssize_t)(MD_CHUNK + 1))
		fail("a read spanning the member without a route transferred %zd bytes",
		     n);
	for (size_t c = 1; c < len / MD_CHUNK; c += 2)
		expect_same(
			g.map + c * MD_CHUNK, before + c * MD_CHUNK, MD_CHUNK,
			"a chunk of the member without a route, in GPU memory");
	for (size_t c = 0; c < len / MD_CHUNK; c += 2) {
		/* Even chunks: the member's bytes, or untouched. */
		if (memcmp((uint8_t *)g.map + c * MD_CHUNK, want + c * MD_CHUNK,
			   MD_CHUNK))
			expect_same(
				g.map + c * MD_CHUNK, before + c * MD_CHUNK,
				MD_CHUNK,
				"a chunk of the routed member, in GPU memory");
	}

	gbuf_teardown(&g);
	close(dev);
	close(md);
	md_stop(true);
	klt_on_exit = NULL;
	free(want);
	free(host);
	free(before);
}
