// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/klt_main.c
 *
 * kmod_lab_test: finds the lab's devices, then runs each test in its own
 * process so that a crash, a hang or a leak in one is reported against it
 * and the others still run. After each test, the registrations it made
 * must all be gone (its files were closed when it exited).
 *
 *   kmod_lab_test --raw /dev/nvme0n1 --ext4-dir /mnt/ext4 \
 *       --ext4-file /mnt/ext4/data.bin --tmpdir /run/klt \
 *       [--noroute /dev/nvme2n1 | --noroute-skip REASON] \
 *       [--scratch-off BYTES] [--max-buffers N] [--timeout S]
 *       [--slow /dev/nvme3n1] [--stack /dev/nvme4n1 --stack-fs-off BYTES
 *        --stack-file NAME] [--dm-p2p 0|1] [--md-p2p 0|1]
 *       [--name-suffix SUFFIX] [TEST-GLOB...]
 *   kmod_lab_test --list
 *   kmod_lab_test [device options] --hold
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "klt.h"

static void t_sysfs_attrs(void);

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
#define T(n)              \
	{                 \
#n, t_##n \
	}
	T(sysfs_attrs),
	T(query),
	T(query_p2p_raw),
	T(query_p2p_ext4),
	T(query_p2p_noroute),
	T(query_p2p_tmpfs),
	T(query_reject_flags),
	T(query_reject_reserved),
	T(reg_mmap_unreg),
	T(reg_two_tokens),
	T(reg_dmabuf_closed),
	T(mmap_subrange),
	T(mmap_past_end),
	T(mmap_private),
	T(mmap_other_file),
	T(unreg_other_file),
	T(mremap_grow),
	T(unreg_twice),
	T(unreg_reject_flags),
	T(unreg_reject_pad),
	T(close_releases),
	T(close_keeps_mapping),
	T(reject_flags),
	T(reject_pad),
	T(reject_reserved0),
	T(reject_reserved1),
	T(reject_size0),
	T(reject_size_unaligned),
	T(reject_offset_unaligned),
	T(reject_erange),
	T(reject_ebadf_dmabuf),
	T(reject_ebadf_storage),
	T(reject_non_dmabuf),
	T(reject_bad_nr),
	T(reject_short_struct),
	T(reject_udmabuf),
	T(reject_outside_bar),
	T(reject_noroute),
	T(reject_tmpfs),
	T(reject_enospc),
	T(reject_e2big),
	T(reject_revoked_dmabuf),
	T(io_raw_read),
	T(io_raw_write),
	T(io_ext4_read),
	T(io_ext4_write),
	T(io_reverse),
	T(io_section_cross),
	T(io_uring_read),
	T(io_uring_write),
	T(io_uring_readv),
	T(hostcheck),
	T(threads_many),
	T(unreg_inflight),
	T(munmap_inflight),
	T(revoke_inflight),
	T(revoke_mapped),
	T(kill_holder),
	T(fork_nocopy),
	T(pages_uncached),
	T(longterm_pin_refused),
	T(io_unrouted_refused),
	T(max_buffer_size_ceiling),
	T(max_buffer_size_lowered),
	T(invalidate_timeout),
	T(stack_dm_linear),
	T(stack_md_raid0),
#undef T
};

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		fail("open %s: %s", path, errname(errno));
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		fail("read %s: %s", path, errname(errno));
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

static void t_sysfs_attrs(void)
{
	char path[256], text[128];
	unsigned int idx;
	unsigned long long start, size;

	snprintf(path, sizeof(path), "%s/pci_address", lab.sysfs);
	read_text(path, text, sizeof(text));
	if (strcmp(text, lab.info.pci_name))
		fail("pci_address '%s', want '%s'", text, lab.info.pci_name);
	snprintf(path, sizeof(path), "%s/bar", lab.sysfs);
	read_text(path, text, sizeof(text));
	if (sscanf(text, "%u %llx %llx", &idx, &start, &size) != 3)
		fail("bar '%s' is not '<index> <start hex> <size hex>'", text);
	if (idx != 2 || start != lab.info.bar_phys_start ||
	    size != lab.info.bar_size)
		fail("bar '%s', want 2 %#llx %#llx", text,
		     (unsigned long long)lab.info.bar_phys_start,
		     (unsigned long long)lab.info.bar_size);
	if (sysfs_registrations() != 0)
		fail("registrations %ld before any test",
		     sysfs_registrations());
}

static void setup(void)
{
	unsigned int dom, bus, dev, fn;
	char path[192];
	int fd, ret;

	klt_test = "setup";
	lab.texp_fd = open("/dev/fgds_test_exporter", O_RDWR | O_CLOEXEC);
	if (lab.texp_fd < 0)
		fail("open /dev/fgds_test_exporter: %s", errname(errno));
	if (ioctl(lab.texp_fd, TEXP_IOCTL_INFO, &lab.info))
		fail("exporter INFO: %s", errname(errno));
	if (sscanf(lab.info.pci_name, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) !=
	    4)
		fail("exporter PCI name '%s'", lab.info.pci_name);
	if (lab.info.bar_size < 4 * SLOT_SIZE)
		fail("BAR2 of %#llx bytes is too small for the tests",
		     (unsigned long long)lab.info.bar_size);
	snprintf(lab.fgds_name, sizeof(lab.fgds_name), "fgds_%04x_%02x_%02x_%x",
		 dom, bus, dev, fn);
	snprintf(path, sizeof(path), "/dev/%s", lab.fgds_name);
	lab.fgds_path = strdup(path);
	snprintf(lab.sysfs, sizeof(lab.sysfs), "/sys/class/fgds/%s",
		 lab.fgds_name);
	lab.texp_refcnt0 = module_refcnt("fgds_test_exporter");

	if (!lab.raw_path || !lab.ext4_dir || !lab.ext4_file || !lab.tmp_dir)
		fail("--raw, --ext4-dir, --ext4-file and --tmpdir are required");
	if (!lab.noroute_path && !lab.noroute_why)
		lab.noroute_why = "no --noroute drive given";
	lab.raw_fd = open(lab.raw_path, O_RDWR | O_CLOEXEC);
	lab.raw_dfd = open(lab.raw_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (lab.raw_fd < 0 || lab.raw_dfd < 0)
		fail("open %s: %s", lab.raw_path, errname(errno));
	if (ioctl(lab.raw_fd, BLKGETSIZE64, &lab.raw_size))
		fail("BLKGETSIZE64 %s: %s", lab.raw_path, errname(errno));
	if (!lab.raw_scratch_off)
		lab.raw_scratch_off = lab.raw_size - SCRATCH_SIZE;
	if (lab.raw_scratch_off + SCRATCH_SIZE > lab.raw_size ||
	    lab.raw_scratch_off < 64 * MiB || lab.raw_scratch_off % MiB)
		fail("raw scratch area at %#llx does not fit a %#llx-byte disk",
		     (unsigned long long)lab.raw_scratch_off,
		     (unsigned long long)lab.raw_size);

	fd = open(lab.fgds_path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", lab.fgds_path, errname(errno));
	ret = fgds_query(fd, &lab.query);
	if (ret)
		fail("QUERY: %s", errname(-ret));
	/* The runner keeps no fgds file open: kill_holder checks refcnt 0. */
	close(fd);
}

/* Runs one test in a child; returns false if it did not pass. */
static bool run_one(const char *base, const char *suffix, void (*fn)(void),
		    int timeout_s)
{
	char name[128];
	int status = 0, waited_ms = 0, limit_ms = timeout_s * 1000;
	bool killed = false;
	pid_t pid, w;
	long regs;

	snprintf(name, sizeof(name), "%s%s", base, suffix);
	pid = fork();
	if (pid < 0) {
		dprintf(STDOUT_FILENO, "FAIL %s: fork: %s\n", name,
			errname(errno));
		return false;
	}
	if (!pid) {
		klt_test = name;
		fn();
		klt_run_on_exit();
		dprintf(STDOUT_FILENO, "PASS %s\n", name);
		_exit(0);
	}
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (waited_ms >= limit_ms && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		} else if (waited_ms >= limit_ms + 20000) {
			dprintf(STDOUT_FILENO,
				"FAIL %s: hung past %d s and survived SIGKILL for 20 s (stuck in the kernel)\n",
				name, timeout_s);
			return false;
		}
		usleep(50 * 1000);
		waited_ms += 50;
	}
	if (killed) {
		dprintf(STDOUT_FILENO, "FAIL %s: timed out after %d s\n", name,
			timeout_s);
		return false;
	}
	if (WIFSIGNALED(status)) {
		dprintf(STDOUT_FILENO, "FAIL %s: died of signal %d (%s)\n",
			name, WTERMSIG(status), strsignal(WTERMSIG(status)));
		return false;
	}
	if (WEXITSTATUS(status) > 2) {
		dprintf(STDOUT_FILENO, "FAIL %s: exit code %d\n", name,
			WEXITSTATUS(status));
		return false;
	}
	/* Everything the test registered must drain once it has exited. */
	regs = wait_registrations(0, 10000);
	if (regs != 0) {
		dprintf(STDOUT_FILENO,
			"FAIL %s_cleanup: registrations %ld 10 s after the test process exited\n",
			name, regs);
		return false;
	}
	return WEXITSTATUS(status) != 1;
}

static bool selected(int argc, char **argv, const char *name)
{
	if (optind >= argc)
		return true;
	for (int i = optind; i < argc; i++)
		if (!fnmatch(argv[i], name, 0))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "raw", required_argument, NULL, 'r' },
		{ "ext4-dir", required_argument, NULL, 'd' },
		{ "ext4-file", required_argument, NULL, 'e' },
		{ "noroute", required_argument, NULL, 'n' },
		{ "noroute-skip", required_argument, NULL, 'N' },
		{ "tmpdir", required_argument, NULL, 't' },
		{ "scratch-off", required_argument, NULL, 's' },
		{ "max-buffers", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "list", no_argument, NULL, 'l' },
		{ "hold", no_argument, NULL, 'H' },
		{ "name-suffix", required_argument, NULL, 'S' },
		{ "slow", required_argument, NULL, 'w' },
		{ "stack", required_argument, NULL, 'k' },
		{ "stack-fs-off", required_argument, NULL, 'o' },
		{ "stack-file", required_argument, NULL, 'f' },
		{ "dm-p2p", required_argument, NULL, 'D' },
		{ "md-p2p", required_argument, NULL, 'M' },
		{}
	};
	int opt, timeout_s = 180, failed = 0;
	const char *suffix = "";
	bool hold = false;

	lab.dm_p2p = lab.md_p2p = -1;
	/* Every line reaches the console even if the guest panics next. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			lab.raw_path = optarg;
			break;
		case 'd':
			lab.ext4_dir = optarg;
			break;
		case 'e':
			lab.ext4_file = optarg;
			break;
		case 'n':
			lab.noroute_path = optarg;
			break;
		case 'N':
			lab.noroute_why = optarg;
			break;
		case 't':
			lab.tmp_dir = optarg;
			break;
		case 's':
			lab.raw_scratch_off = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			lab.want_max_buffers = strtoul(optarg, NULL, 0);
			break;
		case 'T':
			timeout_s = atoi(optarg);
			break;
		case 'H':
			hold = true;
			break;
		case 'S':
			suffix = optarg;
			break;
		case 'w':
			lab.slow_path = optarg;
			break;
		case 'k':
			lab.stack_path = optarg;
			break;
		case 'o':
			lab.stack_fs_off = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			lab.stack_file = optarg;
			break;
		case 'D':
			lab.dm_p2p = atoi(optarg);
			break;
		case 'M':
			lab.md_p2p = atoi(optarg);
			break;
		case 'l':
			for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]);
			     i++)
				printf("%s\n", tests[i].name);
			return 0;
		default:
			fprintf(stderr,
				"usage: see the comment in klt_main.c\n");
			return 2;
		}
	}
	setup();
	if (hold)
		return hold_main();
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (selected(argc, argv, tests[i].name) &&
		    !run_one(tests[i].name, suffix, tests[i].fn, timeout_s))
			failed++;
	return failed ? 1 : 0;
}
