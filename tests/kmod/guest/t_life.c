// SPDX-License-Identifier: GPL-2.0
/*
 * File: tests/kmod/guest/t_life.c
 *
 * Lifetimes: UNREG_BUFFER, munmap and exporter revoke while O_DIRECT and
 * io_uring I/O into the mapping is in flight; revoke of a mapped buffer;
 * a process killed while holding registrations; fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "klt.h"

#define NPREAD 4 /* pread threads, 1 MiB each */
#define URING_QD 32 /* io_uring requests of 64 KiB */
#define URING_OFF (4 * MiB) /* where the io_uring pieces start */
#define EFAULTS_TO_STOP 3 /* a worker is done after this many EFAULTs */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A thread doing I/O into the mapping until told to stop or refused. */
struct worker {
	uint8_t *map; /* where this worker's I/O goes */
	volatile int *stop;
	volatile long ok; /* completed transfers */
	volatile long short_ios;
	volatile long efaults;
	volatile int done;
	int other_err; /* first errno other than EFAULT */
	pthread_t th;
};

static void *pread_worker(void *p)
{
	struct worker *w = p;

	while (!*w->stop && w->efaults < EFAULTS_TO_STOP) {
		uint64_t doff =
			rnd() % ((lab.raw_scratch_off - MiB) / PAGE) * PAGE;
		ssize_t n = pread(lab.raw_dfd, w->map, MiB, doff);

		if (n == (ssize_t)MiB) {
			w->ok++;
		} else if (n >= 0) {
			w->short_ios++;
		} else if (errno == EFAULT) {
			w->efaults++;
		} else {
			w->other_err = errno;
			break;
		}
	}
	w->done = 1;
	return NULL;
}

/* Keeps URING_QD reads in flight, resubmitting each as it completes. */
static void *uring_worker(void *p)
{
	struct worker *w = p;
	struct io_uring ring;
	int inflight = 0, ret;

	ret = io_uring_queue_init(URING_QD, &ring, 0);
	if (ret) {
		w->other_err = -ret;
		w->done = 1;
		return NULL;
	}
	for (;;) {
		bool stopping = *w->stop || w->efaults >= EFAULTS_TO_STOP ||
				w->other_err;
		struct io_uring_cqe *cqe;

		while (!stopping && inflight < URING_QD) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned int slot = rnd() % URING_QD;

			io_uring_prep_read(
				sqe, lab.raw_dfd, w->map + slot * 64 * KiB,
				64 * KiB,
				rnd() % (lab.raw_scratch_off / (64 * KiB) - 1) *
					64 * KiB);
			inflight++;
		}
		if (!inflight)
			break;
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR) {
			w->other_err = -ret;
			break;
		}
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			if (cqe->res == (int)(64 * KiB))
				w->ok++;
			else if (cqe->res >= 0)
				w->short_ios++;
			else if (cqe->res == -EFAULT)
				w->efaults++;
			else if (!w->other_err)
				w->other_err = -cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			inflight--;
		}
	}
	io_uring_queue_exit(&ring);
	w->done = 1;
	return NULL;
}

struct io_load {
	struct worker w[NPREAD + 1];
	volatile int stop;
};

/* Starts the workers and waits until every one has completed I/O. */
static void load_start(struct io_load *l, uint8_t *map)
{
	long deadline = now_ms() + 20000;

	memset(l, 0, sizeof(*l));
	for (int i = 0; i <= NPREAD; i++) {
		struct worker *w = &l->w[i];

		w->map = i < NPREAD ? map + i * MiB : map + URING_OFF;
		w->stop = &l->stop;
		if (pthread_create(&w->th, NULL,
				   i < NPREAD ? pread_worker : uring_worker, w))
			fail("pthread_create failed");
	}
	for (int i = 0; i <= NPREAD; i++) {
		while (l->w[i].ok < 2 && !l->w[i].done && now_ms() < deadline)
			usleep(1000);
		if (l->w[i].ok < 2)
			fail("I/O worker %d did not get going: ok %ld, %s", i,
			     l->w[i].ok, errname(l->w[i].other_err));
	}
}

/*
 * After the mapping has been taken away, every worker must see EFAULT
 * within a few seconds; then all stop. Returns when all are joined.
 */
static void load_expect_efault(struct io_load *l, const char *after)
{
	long deadline = now_ms() + 10000;
	long ok_before[NPREAD + 1];

	for (int i = 0; i <= NPREAD; i++)
		ok_before[i] = l->w[i].ok;
	for (int i = 0; i <= NPREAD; i++)
		while (!l->w[i].done && now_ms() < deadline)
			usleep(2000);
	l->stop = 1;
	for (int i = 0; i <= NPREAD; i++)
		pthread_join(l->w[i].th, NULL);
	for (int i = 0; i <= NPREAD; i++) {
		struct worker *w = &l->w[i];

		if (w->other_err)
			fail("worker %d: I/O failed with %s (want success or EFAULT) after %s",
			     i, errname(w->other_err), after);
		if (w->efaults < EFAULTS_TO_STOP)
			fail("worker %d: I/O still succeeds 10 s after %s (%ld ok since, %ld EFAULT)",
			     i, after, w->ok - ok_before[i], w->efaults);
		if (w->short_ios)
			info("worker %d: %ld short transfers around %s", i,
			     w->short_ios, after);
	}
}

static void expect_registrations_drain(const char *after)
{
	long regs = wait_registrations(0, 5000);

	if (regs != 0)
		fail("registrations %ld 5 s after %s, want 0", regs, after);
}

void t_unreg_inflight(void)
{
	int dev = fgds_open();
	struct io_load l;
	struct gbuf g;
	int ret;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_INFLIGHT), 8 * MiB, 0, 0);
	load_start(&l, g.map);
	ret = fgds_unreg(dev, g.token);
	if (ret)
		fail("UNREG_BUFFER with I/O in flight: %s", errname(-ret));
	load_expect_efault(&l, "UNREG_BUFFER");
	munmap(g.map, g.size);
	close(g.dmabuf);
	close(dev);
	expect_registrations_drain("UNREG_BUFFER, munmap and close");
}

void t_munmap_inflight(void)
{
	int dev = fgds_open();
	struct io_load l;
	struct gbuf g;
	int ret;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_INFLIGHT), 8 * MiB, 0, 0);
	load_start(&l, g.map);
	if (munmap(g.map, g.size))
		fail("munmap with I/O in flight: %s", errname(errno));
	load_expect_efault(&l, "munmap");
	ret = fgds_unreg(dev, g.token);
	if (ret)
		fail("UNREG_BUFFER after munmap: %s", errname(-ret));
	close(g.dmabuf);
	close(dev);
	expect_registrations_drain("munmap, UNREG_BUFFER and close");
}

void t_revoke_inflight(void)
{
	int dev = fgds_open();
	struct io_load l;
	struct gbuf g;
	int ret;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_INFLIGHT), 8 * MiB, 0, 0);
	load_start(&l, g.map);
	ret = texp_revoke(g.dmabuf);
	if (ret)
		fail("exporter REVOKE: %s", errname(-ret));
	load_expect_efault(&l, "exporter revoke");
	ret = fgds_unreg(dev, g.token);
	if (ret)
		fail("UNREG_BUFFER after revoke: %s", errname(-ret));
	munmap(g.map, g.size);
	close(g.dmabuf);
	close(dev);
	expect_registrations_drain("revoke, UNREG_BUFFER, munmap and close");
}

void t_revoke_mapped(void)
{
	int dev = fgds_open();
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct gbuf g;
	void *addr;
	ssize_t n;
	int sig, ret, err;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_REVOKE), 2 * MiB, 0, 0);
	/* Populate the first MiB only: revoke must zap present PTEs and
	 * refuse faults on absent ones. */
	memset(g.map, 0x42, MiB);
	ret = texp_revoke(g.dmabuf);
	if (ret)
		fail("exporter REVOKE: %s", errname(-ret));
	{
		struct texp_status st;

		if (!texp_status(g.dmabuf, &st))
			info("after revoke, fgds holds %u attachments and %u mappings of the dma-buf",
			     st.attachments, st.mappings);
	}

	sig = catch_fault(touch_read, g.map + 5 * PAGE, &addr);
	if (sig != SIGBUS)
		fail("CPU read of a populated page after revoke: %s, want SIGBUS",
		     sig ? strsignal(sig) : "no fault (PTE not zapped)");
	if (addr != g.map + 5 * PAGE)
		fail("SIGBUS at %p, want %p", addr, (void *)(g.map + 5 * PAGE));
	sig = catch_fault(touch_read, g.map + MiB + PAGE, NULL);
	if (sig != SIGBUS)
		fail("CPU read of a never-touched page after revoke: %s, want SIGBUS",
		     sig ? strsignal(sig) : "no fault");

	n = pread(lab.raw_dfd, g.map, MiB, 0);
	if (n >= 0 || errno != EFAULT)
		fail("O_DIRECT pread into the mapping after revoke: %zd (%s), want EFAULT",
		     n, n < 0 ? errname(errno) : "success");
	n = pwrite(lab.raw_dfd, g.map, MiB, lab.raw_scratch_off);
	if (n >= 0 || errno != EFAULT)
		fail("O_DIRECT pwrite from the mapping after revoke: %zd (%s), want EFAULT",
		     n, n < 0 ? errname(errno) : "success");

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret)
		fail("io_uring_queue_init: %s", errname(-ret));
	io_uring_prep_read(io_uring_get_sqe(&ring), lab.raw_dfd, g.map + MiB,
			   64 * KiB, 0);
	io_uring_submit(&ring);
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret || cqe->res != -EFAULT)
		fail("io_uring READ into the mapping after revoke: %d (%s), want -EFAULT",
		     ret ? ret : cqe->res,
		     errname(ret	  ? -ret :
			     cqe->res < 0 ? -cqe->res :
					    0));
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);

	/* Not specified: report what a new mapping of the token does. */
	addr = fgds_mmap(dev, g.token, PAGE, MAP_SHARED, &err);
	if (addr) {
		sig = catch_fault(touch_read, addr, NULL);
		info("mmap of a revoked token succeeds; touching it: %s",
		     sig ? strsignal(sig) : "no fault");
		if (!sig)
			fail("a new mapping of a revoked registration is readable");
		munmap(addr, PAGE);
	} else {
		info("mmap of a revoked token: %s", errname(err));
	}

	ret = fgds_unreg(dev, g.token);
	if (ret)
		fail("UNREG_BUFFER after revoke: %s", errname(-ret));
	munmap(g.map, g.size);
	close(dev);
	expect_registrations_drain("revoke, UNREG_BUFFER, munmap and close");
	expect_texp_status(g.dmabuf, 0, 0,
			   "after the revoked registration is gone");
	close(g.dmabuf);
}

/*
 * The child of kill_holder: 3 registrations of 6 MiB (the load needs
 * 4 MiB + 2 MiB), I/O on all, until killed.
 */
static void __attribute__((noreturn)) holder_child(int ready_fd)
{
	int dev = fgds_open();
	struct io_load l;
	struct gbuf g[3];

	klt_test = "kill_holder(child)";
	for (int i = 0; i < 3; i++)
		gbuf_setup(&g[i], dev, lab.raw_fd,
			   slot_off(SLOT_KILL) + i * 6 * MiB, 6 * MiB, 0, 0);
	load_start(&l, g[0].map);
	/* More I/O on the other two, through plain threads. */
	for (int i = 1; i < 3; i++) {
		struct worker *w = calloc(1, sizeof(*w));

		w->map = g[i].map;
		w->stop = &l.stop;
		pthread_create(&w->th, NULL, pread_worker, w);
	}
	if (write(ready_fd, "R", 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

void t_kill_holder(void)
{
	int pipefd[2], status;
	struct pollfd pfd;
	long regs, refs;
	pid_t pid;
	char c;

	if (pipe(pipefd))
		fail("pipe: %s", errname(errno));
	pid = fork();
	if (pid < 0)
		fail("fork: %s", errname(errno));
	if (!pid) {
		close(pipefd[0]);
		holder_child(pipefd[1]);
	}
	close(pipefd[1]);
	pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	if (poll(&pfd, 1, 30000) != 1 || read(pipefd[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail("the holder did not get its I/O going (see its FAIL line)");
	}
	usleep(300 * 1000);
	regs = sysfs_registrations();
	if (regs != 3)
		info("registrations %ld while the holder runs, expected 3",
		     regs);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail("holder ended with status %#x before being killed",
		     status);

	regs = wait_registrations(0, 10000);
	if (regs != 0)
		fail("registrations %ld 10 s after SIGKILL of the holder",
		     regs);
	refs = module_refcnt("fgds");
	for (int i = 0; refs != 0 && i < 250; i++) {
		usleep(20 * 1000);
		refs = module_refcnt("fgds");
	}
	if (refs != 0)
		fail("/sys/module/fgds/refcnt %ld 5 s after the holder died",
		     refs);
	refs = module_refcnt("fgds_test_exporter");
	for (int i = 0; refs != lab.texp_refcnt0 && i < 250; i++) {
		usleep(20 * 1000);
		refs = module_refcnt("fgds_test_exporter");
	}
	if (refs != lab.texp_refcnt0)
		fail("exporter refcnt %ld after the holder died, was %ld (dma-bufs leaked)",
		     refs, lab.texp_refcnt0);
}

void t_fork_nocopy(void)
{
	int dev = fgds_open(), status;
	uint8_t *want = xmalloc_aligned(MiB);
	struct gbuf g;
	pid_t pid;

	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_FORK), MiB, 0, 0);
	fill_pattern(want, MiB, 800);
	memcpy(g.map, want, MiB);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", errname(errno));
	if (!pid) {
		/* VM_DONTCOPY: nothing is mapped here in the child. */
		int sig = catch_fault(touch_read, g.map, NULL);
		ssize_t n;

		if (sig == 0)
			_exit(10);
		if (sig != SIGSEGV)
			_exit(11);
		n = pread(lab.raw_dfd, g.map, MiB, 0);
		_exit(n < 0 && errno == EFAULT ? 0 : 12);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status))
		fail("child died with status %#x", status);
	switch (WEXITSTATUS(status)) {
	case 0:
		break;
	case 10:
		fail("the forked child can read the mapping (VM_DONTCOPY missing)");
	case 11:
		fail("the forked child got SIGBUS, want SIGSEGV (VMA inherited)");
	case 12:
		fail("O_DIRECT into the address in the child did not fail with EFAULT");
	default:
		fail("child exit code %d", WEXITSTATUS(status));
	}
	expect_same(g.map, want, MiB, "parent's mapping after the fork");
	read_full(lab.raw_dfd, g.map, MiB, 0,
		  "parent O_DIRECT read after fork");
	gbuf_teardown(&g);
}

/* --hold: keeps a registration with a mapping until killed (rmmod tests). */
int hold_main(void)
{
	int dev = fgds_open();
	struct gbuf g;

	klt_test = "hold";
	gbuf_setup(&g, dev, lab.raw_fd, slot_off(SLOT_KILL), MiB, 0, 0);
	read_full(lab.raw_dfd, g.map, MiB, 0, "O_DIRECT read into the mapping");
	dprintf(STDOUT_FILENO, "READY\n");
	for (;;)
		pause();
}
