/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File: tests/kmod/guest/klt.h
 *
 * kmod_lab_test: the fgds module's tests, run inside the QEMU lab guest.
 * Every test runs in its own forked process (klt_main.c), prints exactly one
 * line "PASS <name>", "FAIL <name>: <reason>" or "SKIP <name>: <reason>",
 * and may print "INFO <name>: ..." lines with observations and "HOSTCHECK"
 * lines the lab verifies on the host after QEMU exits.
 */
#ifndef KLT_H
#define KLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fgds_ioctl.h"
#include "fgds_test_exporter.h"

#define KiB (1024ULL)
#define MiB (1024ULL * KiB)
#define PAGE 4096ULL

/* The BAR is cut into 16 MiB slots, one per test; the last one belongs to
 * the hostcheck test only, so its bytes survive until QEMU exits. */
#define SLOT_SIZE (16 * MiB)
enum klt_slot {
	SLOT_API,
	SLOT_REJECT,
	SLOT_RAW,
	SLOT_EXT4,
	SLOT_REVERSE,
	SLOT_URING,
	SLOT_INFLIGHT,
	SLOT_REVOKE,
	SLOT_KILL,
	SLOT_FORK,
	SLOT_THREADS,
	SLOT_FIXED,
	SLOT_TIMEOUT,
	SLOT_STACK,
};

/* The raw disk's scratch area (32 MiB), cut for the tests that write. */
#define SCRATCH_RAW_WRITE 0 /* io_raw_write, 16 MiB */
#define SCRATCH_URING_WRITE (16 * MiB) /* io_uring_write, 8 MiB */
#define SCRATCH_HOSTCHECK (28 * MiB) /* hostcheck, 4 MiB */
#define SCRATCH_SIZE (32 * MiB)

struct klt_lab {
	const char *fgds_path; /* /dev/fgds_DDDD_BB_DD_F */
	char fgds_name[64]; /* fgds_DDDD_BB_DD_F */
	char sysfs[128]; /* /sys/class/fgds/<fgds_name> */
	struct texp_info info; /* from the exporter */
	const char *raw_path; /* block device of serial fgds-raw */
	const char *ext4_dir; /* mount point of serial fgds-ext4 */
	const char *ext4_file; /* its pattern file */
	const char *noroute_path; /* NULL: see noroute_why */
	const char *noroute_why;
	const char *tmp_dir; /* on tmpfs */
	const char *slow_path; /* serial fgds-slow (reads throttled), or NULL */
	const char *stack_path; /* serial fgds-stack, or NULL */
	uint64_t stack_fs_off; /* where its ext4 filesystem starts */
	const char *stack_file; /* the pattern file's name in it */
	/* Whether this kernel passes P2PDMA pages through dm / md raid0: 1,
	 * 0, or -1 (not known: either outcome is checked, not pinned). */
	int dm_p2p;
	int md_p2p;
	uint64_t raw_size;
	uint64_t raw_scratch_off;
	unsigned int want_max_buffers; /* what guest-tests.sh loaded */
	struct fgds_query query; /* QUERY at start, no storage fd */
	int texp_fd; /* /dev/fgds_test_exporter */
	int raw_fd; /* raw device, buffered, O_RDWR */
	int raw_dfd; /* raw device, O_DIRECT, O_RDWR */
	long texp_refcnt0; /* exporter module refcount at start */
};
extern struct klt_lab lab;

/* Reporting (klt_lib.c). fail() and skip() end the test process, after
 * calling klt_on_exit (if set): a test that changed shared state (a
 * module parameter, a mount) puts it back there. */
extern const char *klt_test;
extern void (*klt_on_exit)(void);
void klt_run_on_exit(void); /* calls klt_on_exit once */
__attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void skip(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void info(const char *fmt, ...);
const char *errname(int err); /* "EINVAL"; err > 0 */
/* Fails unless ret (0 or -errno) is -want. */
void expect_err(int ret, int want, const char *what);

/* Exporter. */
int texp_export(uint64_t off, uint64_t size, uint64_t seg, uint32_t flags);
int texp_export_ok(uint64_t off, uint64_t size, uint64_t seg, uint32_t flags);
int texp_revoke(int dmabuf_fd);
/* 0 or -errno; -EINVAL for a dma-buf that is not the exporter's. */
int texp_status(int dmabuf_fd, struct texp_status *st);
/* Fails unless the exporter sees that many attachments and mappings. */
void expect_texp_status(int dmabuf_fd, unsigned int attachments,
			unsigned int mappings, const char *when);
uint64_t slot_off(enum klt_slot slot);
uint64_t hostcheck_off(void);

/* fgds. All return 0 or -errno unless said otherwise. */
int fgds_open(void); /* fails the test on error; returns fd */
int fgds_query(int dev, struct fgds_query *q);
int fgds_reg_args(int dev, struct fgds_reg_buffer *r);
int fgds_reg(int dev, int dmabuf, int storage, uint64_t off, uint64_t size,
	     uint64_t *token);
int fgds_unreg(int dev, uint64_t token);
/* Returns the mapping or NULL with *err = errno. */
void *fgds_mmap(int dev, uint64_t token, size_t len, int flags, int *err);
long sysfs_registrations(void);
/* Waits until registrations == want; returns the last value read. */
long wait_registrations(long want, int timeout_ms);
long module_refcnt(const char *module);

/* One registered, mapped piece of the BAR. */
struct gbuf {
	int dev;
	int dmabuf;
	uint64_t token;
	uint8_t *map;
	uint64_t size;
	uint64_t bar_off;
};
void gbuf_setup(struct gbuf *g, int dev, int storage_fd, uint64_t bar_off,
		uint64_t size, uint64_t seg, uint32_t flags);
void gbuf_teardown(struct gbuf *g);

/* Data. */
void *xmalloc_aligned(size_t len);
void read_full(int fd, void *buf, size_t len, uint64_t off, const char *what);
void write_full(int fd, const void *buf, size_t len, uint64_t off,
		const char *what);
void fill_pattern(void *buf, size_t len, uint64_t seed);
void fill_inverse(volatile uint8_t *dst, const uint8_t *src, size_t len);
/* Fails with a description of the first differing byte. */
void expect_same(const volatile uint8_t *got, const uint8_t *want, size_t len,
		 const char *what);
uint64_t rnd(void);

/* Signals: runs fn(arg) and returns the signal it raised, or 0. */
int catch_fault(void (*fn)(void *), void *arg, void **fault_addr);
void touch_read(void *addr); /* fn for catch_fault */

/* Test groups. */
void t_query(void);
void t_query_p2p_raw(void);
void t_query_p2p_ext4(void);
void t_query_p2p_noroute(void);
void t_query_p2p_tmpfs(void);
void t_query_reject_flags(void);
void t_query_reject_reserved(void);
void t_reg_mmap_unreg(void);
void t_reg_two_tokens(void);
void t_reg_dmabuf_closed(void);
void t_mmap_subrange(void);
void t_mmap_past_end(void);
void t_mmap_private(void);
void t_mmap_other_file(void);
void t_unreg_other_file(void);
void t_mremap_grow(void);
void t_unreg_twice(void);
void t_unreg_reject_flags(void);
void t_unreg_reject_pad(void);
void t_close_releases(void);
void t_close_keeps_mapping(void);
void t_reject_flags(void);
void t_reject_pad(void);
void t_reject_reserved0(void);
void t_reject_reserved1(void);
void t_reject_size0(void);
void t_reject_size_unaligned(void);
void t_reject_offset_unaligned(void);
void t_reject_erange(void);
void t_reject_ebadf_dmabuf(void);
void t_reject_ebadf_storage(void);
void t_reject_non_dmabuf(void);
void t_reject_bad_nr(void);
void t_reject_short_struct(void);
void t_reject_udmabuf(void);
void t_reject_outside_bar(void);
void t_reject_noroute(void);
void t_reject_tmpfs(void);
void t_reject_enospc(void);
void t_reject_e2big(void);
void t_reject_revoked_dmabuf(void);
void t_io_raw_read(void);
void t_io_raw_write(void);
void t_io_ext4_read(void);
void t_io_ext4_write(void);
void t_io_reverse(void);
void t_io_section_cross(void);
void t_io_uring_read(void);
void t_io_uring_write(void);
void t_io_uring_readv(void);
void t_hostcheck(void);
void t_threads_many(void);
void t_unreg_inflight(void);
void t_munmap_inflight(void);
void t_revoke_inflight(void);
void t_revoke_mapped(void);
void t_kill_holder(void);
void t_fork_nocopy(void);
void t_pages_uncached(void);
void t_longterm_pin_refused(void);
void t_io_unrouted_refused(void);
void t_max_buffer_size_ceiling(void);
void t_max_buffer_size_lowered(void);
void t_invalidate_timeout(void);
void t_stack_dm_linear(void);
void t_stack_md_raid0(void);
int hold_main(void);

/* Module parameters (t_limits.c): 0 or -errno. */
int param_write(const char *name, const char *value);
void param_read(const char *name, char *buf, size_t len);

#endif /* KLT_H */
