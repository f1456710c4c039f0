/* examples/usrbio_read.c: read a file from an fgds mount through usrbio,
 * keeping many reads in flight without a system call per read, the way a
 * training job's data loader would. Copy it and replace consume().
 *
 *   cc -O2 usrbio_read.c -I<fgds>/include -L<build>/usrbio -lfgds_usrbio \
 *      -lstdc++ -lpthread -o usrbio_read
 *   ./usrbio_read /mnt/fgds/shard-0000.bin
 *
 * Every fgds_* call returns 0 (or a count) or -errno and leaves errno alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fgds/usrbio.h"

#define BLOCK (1u << 20) /* bytes per read; 4096-aligned reads go O_DIRECT */
#define DEPTH 16u        /* reads in flight */

/* Whatever the job does with a block; here, a checksum. */
static uint64_t consume(const unsigned char* data, int64_t len) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < len; ++i) sum = sum * 31 + data[i];
  return sum;
}

static int fail(const char* what, int err) {
  fprintf(stderr, "usrbio_read: %s: %s\n", what, strerror(-err));
  return 1;
}

/* A refusal by one of the daemon's limits names it (docs/limits.md);
 * anything else is an ordinary error. */
static int fail_session(const struct fgds_session* session, const char* what,
                        int err) {
  if (session->last_limit != FGDS_LIMIT_NONE) {
    fprintf(stderr, "usrbio_read: %s: %s: %s\n", what, strerror(-err),
            fgds_limit_describe(session->last_limit));
    return 1;
  }
  return fail(what, err);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE_ON_FGDS_MOUNT\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }

  /* One session per process and mount: any path inside the mount finds it. */
  struct fgds_session session;
  int ret = fgds_session_open(&session, argv[1], NULL);
  if (ret == -ENOTSUP) return fail("session (is this an fgds mount?)", ret);
  if (ret < 0) return fail_session(&session, "session", ret);

  /* One buffer region, DEPTH blocks, shared with the daemon. */
  struct fgds_iov_params iov_params = {.size = (uint64_t)DEPTH * BLOCK,
                                       .numa_node = -1};
  struct fgds_iov iov;
  ret = fgds_iov_create(&session, &iov, &iov_params);
  if (ret < 0) return fail_session(&session, "iov", ret);

  /* One ring. io_depth 0: the daemon starts each read as soon as it sees
   * it. For many small reads, io_depth 8 with timeout_us 50 batches them
   * without ever stalling a partial batch. */
  struct fgds_ior_params ior_params = {.entries = DEPTH};
  struct fgds_ior ior;
  ret = fgds_ior_create(&session, &ior, &ior_params);
  if (ret < 0) return fail_session(&session, "ior", ret);

  /* Register the file once; the descriptor may be closed afterwards. */
  int file = fgds_fd_register(&session, fd, 0);
  close(fd);
  if (file < 0) return fail_session(&session, "register", file);

  uint64_t next = 0, done = 0, sum = 0, direct = 0;
  const uint64_t size = (uint64_t)st.st_size;
  unsigned in_flight = 0;
  struct fgds_cqe cqes[DEPTH];
  /* Slot i of the iov is free when bit i is clear. userdata = slot. */
  uint32_t busy = 0;
  while (done < size) {
    for (unsigned slot = 0; slot < DEPTH && next < size; ++slot) {
      if (busy & (1u << slot)) continue;
      uint64_t len = size - next < BLOCK ? size - next : BLOCK;
      char* buf = (char*)iov.base + (uint64_t)slot * BLOCK;
      ret = fgds_prep_read(&ior, &iov, buf, file, next, len, slot);
      if (ret < 0) return fail("prep", ret);
      busy |= 1u << slot;
      next += len;
      ++in_flight;
    }
    fgds_ior_submit(&ior);
    /* Sleeps on an eventfd until at least one read completes; returns
     * -ENOTCONN if the daemon goes away instead of hanging. */
    int n = fgds_ior_wait(&ior, cqes, DEPTH, 1, -1);
    if (n < 0) return fail("wait", n);
    for (int i = 0; i < n; ++i) {
      unsigned slot = (unsigned)cqes[i].userdata;
      if (cqes[i].result < 0) return fail("read", (int)cqes[i].result);
      /* Blocks complete in any order; a real loader would hand the block
       * to its consumer here and free the slot when that is done. */
      sum ^= consume((unsigned char*)iov.base + (uint64_t)slot * BLOCK,
                     cqes[i].result);
      direct += cqes[i].path == FGDS_PATH_DIRECT;
      done += (uint64_t)cqes[i].result;
      busy &= ~(1u << slot);
      --in_flight;
      if (cqes[i].result == 0) done = size; /* the file shrank */
    }
  }
  printf("read %llu bytes, checksum %016llx, %llu reads O_DIRECT\n",
         (unsigned long long)done, (unsigned long long)sum,
         (unsigned long long)direct);

  fgds_fd_unregister(&session, file);
  fgds_ior_destroy(&ior);
  fgds_iov_destroy(&iov);
  fgds_session_close(&session);
  return in_flight == 0 ? 0 : 1;
}
