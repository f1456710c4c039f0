/* tests/bench/usrbio_entry_driver.c: a fixed usrbio workload, for counting
 * what the daemon spends per ring entry (tests/bench/usrbio_entry_cost.sh):
 * COUNT 4 KiB reads at pseudo-random page offsets of FILE (an fgds mount's
 * file, its pages cached), DEPTH in flight, through the page cache, on one
 * ring; the client never spins (spin_us 0) and the daemon starts each
 * batch at once (io_depth 0), so what the daemon does per entry does not
 * depend on timing. Checks every result; prints the entries done.
 *
 * Usage: usrbio_entry_driver FILE COUNT [DEPTH]   (DEPTH default 32)
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

static int fail(const char* what, int err) {
  fprintf(stderr, "usrbio_entry_driver: %s: %s\n", what, strerror(-err));
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FILE COUNT [DEPTH]\n", argv[0]);
    return 2;
  }
  const uint64_t count = strtoull(argv[2], NULL, 10);
  const unsigned depth = argc > 3 ? (unsigned)atoi(argv[3]) : 32;
  if (depth == 0 || depth > 256) return fail("depth", -EINVAL);
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) {
    perror(argv[1]);
    return 1;
  }
  const uint64_t pages = (uint64_t)st.st_size / 4096;
  struct fgds_session session;
  int ret = fgds_session_open(&session, argv[1], NULL);
  if (ret < 0) return fail("session", ret);
  struct fgds_iov_params iov_params = {.size = (uint64_t)depth * 4096,
                                       .numa_node = -1};
  struct fgds_iov iov;
  ret = fgds_iov_create(&session, &iov, &iov_params);
  if (ret < 0) return fail("iov", ret);
  struct fgds_ior_params ior_params = {.entries = 256,
                                       .flags = FGDS_IOR_BUFFERED};
  struct fgds_ior ior;
  ret = fgds_ior_create(&session, &ior, &ior_params);
  if (ret < 0) return fail("ior", ret);
  int file = fgds_fd_register(&session, fd, 0);
  close(fd);
  if (file < 0) return fail("register", file);

  struct fgds_cqe cqes[256];
  uint64_t submitted = 0, done = 0, x = 88172645463325252ull;
  unsigned free_slots[256], nfree = depth;
  for (unsigned i = 0; i < depth; ++i) free_slots[i] = i;
  while (done < count) {
    while (nfree > 0 && submitted < count) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const unsigned slot = free_slots[--nfree];
      ret = fgds_prep_read(&ior, &iov, (char*)iov.base + (uint64_t)slot * 4096,
                           file, (x % pages) * 4096, 4096, slot);
      if (ret < 0) return fail("prep", ret);
      ++submitted;
    }
    fgds_ior_submit(&ior);
    int n = fgds_ior_wait(&ior, cqes, 256, 1, -1);
    if (n < 0) return fail("wait", n);
    for (int i = 0; i < n; ++i) {
      if (cqes[i].result != 4096) return fail("read", (int)cqes[i].result);
      free_slots[nfree++] = (unsigned)cqes[i].userdata;
    }
    done += (uint64_t)n;
  }
  printf("entries %llu\n", (unsigned long long)done);
  fgds_fd_unregister(&session, file);
  fgds_ior_destroy(&ior);
  fgds_iov_destroy(&iov);
  fgds_session_close(&session);
  return 0;
}
