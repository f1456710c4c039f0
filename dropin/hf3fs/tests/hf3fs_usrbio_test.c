/* hf3fs_usrbio_test: a 3FS USRBIO program, written as 3FS's README
 * (src/lib/api/UsrbIo.md) shows one, relinked against FGDS's
 * libhf3fs_api_shared.so and run on a directory of an fgds mount
 * (argv[1]). Every call, data checked byte for byte, and the error paths.
 * Exit 0 on success, 1 on the first failed check (printed). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hf3fs_usrbio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1u << 20)
#define FILE_BYTES (8u * MIB)

static int failures;

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                        \
      return;                                                            \
    }                                                                    \
  } while (0)

static unsigned char PatternByte(uint64_t seed, uint64_t i) {
  return (unsigned char)((((i + 1) ^ seed) * 0x9E3779B97F4A7C15ull) >> 56);
}

static int Matches(const uint8_t* buf, uint64_t len, uint64_t seed,
                   uint64_t offset) {
  for (uint64_t i = 0; i < len; ++i) {
    if (buf[i] != PatternByte(seed, offset + i)) return 0;
  }
  return 1;
}

static char dir[4096];
static char mnt[256];
static char path[4200];
static int fd = -1;

static struct timespec In(int seconds) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += seconds;
  return t;
}

/* Submits and reaps `n` entries; returns how many completed. */
static int WaitAll(struct hf3fs_ior* ior, struct hf3fs_cqe* cqes, int n) {
  if (hf3fs_submit_ios(ior) != 0) return -1;
  int got = 0;
  while (got < n) {
    struct timespec deadline = In(10);
    int r = hf3fs_wait_for_ios(ior, cqes + got, n - got, 1, &deadline);
    if (r <= 0) return got;
    got += r;
  }
  return got;
}

static void TestMounts(void) {
  int len = hf3fs_extract_mount_point(mnt, sizeof(mnt), dir);
  CHECK(len > 1 && len == (int)strlen(mnt) + 1);
  CHECK(strncmp(dir, mnt, strlen(mnt)) == 0);
  char tiny[2];
  CHECK(hf3fs_extract_mount_point(tiny, sizeof(tiny), dir) == len);
  CHECK(hf3fs_extract_mount_point(tiny, sizeof(tiny), "/proc") == -1);

  /* The file, written through the mount with POSIX. */
  snprintf(path, sizeof(path), "%s/hf3fs-example.bin", dir);
  int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(w >= 0);
  uint8_t* data = malloc(FILE_BYTES);
  for (uint64_t i = 0; i < FILE_BYTES; ++i) data[i] = PatternByte(1, i);
  CHECK(write(w, data, FILE_BYTES) == (ssize_t)FILE_BYTES);
  free(data);
  close(w);

  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  CHECK(hf3fs_is_hf3fs(fd));
  int other = open("/proc/self/stat", O_RDONLY);
  CHECK(!hf3fs_is_hf3fs(other));

  /* hf3fs_reg_fd: <= 0 on success, a positive errno on failure. */
  CHECK(hf3fs_reg_fd(fd, 0) <= 0);
  CHECK(hf3fs_reg_fd(fd, 0) == EINVAL); /* registered already */
  CHECK(hf3fs_reg_fd(-1, 0) == EBADF);
  CHECK(hf3fs_reg_fd(other, 0) > 0); /* not on an FGDS mount */
  CHECK(hf3fs_reg_fd(fd, 1) == EINVAL);
  close(other);
}

static void TestRead(void) {
  /* As 3FS's README: a read ring, an iov, a registered fd. */
  struct hf3fs_ior ior;
  CHECK(hf3fs_iorcreate4(&ior, mnt, 16, true, 0, 0, -1, 0) == 0);
  CHECK(hf3fs_io_entries(&ior) >= 16);
  CHECK(hf3fs_ior_size(16) > 0);
  CHECK(ior.for_read);
  struct hf3fs_iov iov;
  CHECK(hf3fs_iovcreate(&iov, mnt, FILE_BYTES, 0, -1) == 0);
  CHECK(iov.base != NULL && iov.size == FILE_BYTES);
  CHECK(hf3fs_iov_mem_type(&iov) == HF3FS_MEM_HOST);
  CHECK(hf3fs_iov_device_id(&iov) == -1);

  int index[8];
  for (int i = 0; i < 8; ++i) {
    index[i] =
        hf3fs_prep_io(&ior, &iov, true, iov.base + (size_t)i * MIB, fd,
                      (size_t)(7 - i) * MIB, MIB, (void*)(uintptr_t)(1000 + i));
    CHECK(index[i] >= 0);
  }
  struct hf3fs_cqe cqes[8];
  CHECK(WaitAll(&ior, cqes, 8) == 8);
  int seen[8] = {0};
  for (int k = 0; k < 8; ++k) {
    int i = (int)((uintptr_t)cqes[k].userdata - 1000);
    CHECK(i >= 0 && i < 8 && !seen[i]);
    seen[i] = 1;
    CHECK(cqes[k].index == index[i]);
    CHECK(cqes[k].result == MIB);
    CHECK(Matches(iov.base + (size_t)i * MIB, MIB, 1, (uint64_t)(7 - i) * MIB));
  }

  /* Short only at end of file; unaligned shapes. */
  CHECK(hf3fs_prep_io(&ior, &iov, true, iov.base, fd, FILE_BYTES - 4096, MIB,
                      NULL) >= 0);
  CHECK(hf3fs_prep_io(&ior, &iov, true, iov.base + MIB + 3, fd, 12345, 777,
                      NULL) >= 0);
  CHECK(WaitAll(&ior, cqes, 2) == 2);
  for (int k = 0; k < 2; ++k) {
    CHECK(cqes[k].result == 4096 || cqes[k].result == 777);
  }
  CHECK(Matches(iov.base, 4096, 1, FILE_BYTES - 4096));
  CHECK(Matches(iov.base + MIB + 3, 777, 1, 12345));

  /* Errors at prep time. */
  CHECK(hf3fs_prep_io(&ior, &iov, false, iov.base, fd, 0, 4096, NULL) ==
        -EINVAL); /* a read ring takes no writes */
  CHECK(hf3fs_prep_io(&ior, &iov, true, iov.base + FILE_BYTES - 10, fd, 0, 4096,
                      NULL) == -EINVAL); /* past the iov */
  CHECK(hf3fs_prep_io(&ior, &iov, true, iov.base, fd + 100, 0, 4096, NULL) ==
        -EBADF); /* not registered */
  CHECK(hf3fs_prep_io(NULL, &iov, true, iov.base, fd, 0, 4096, NULL) ==
        -EINVAL);

  /* A full ring says -EAGAIN instead of overwriting. */
  int prepared = 0, last = 0;
  while ((last = hf3fs_prep_io(&ior, &iov, true, iov.base, fd, 0, 4096,
                               NULL)) >= 0) {
    ++prepared;
    if (prepared > 100000) break;
  }
  CHECK(last == -EAGAIN);
  CHECK(prepared >= 16);
  struct hf3fs_cqe* many = calloc((size_t)prepared, sizeof(*many));
  CHECK(WaitAll(&ior, many, prepared) == prepared);
  free(many);

  /* hf3fs_iovwrap adopts part of an iov this process created, by id. */
  struct hf3fs_iov part;
  CHECK(hf3fs_iovwrap(&part, iov.base + 2 * MIB, (const uint8_t*)iov.id, mnt,
                      MIB, 0, -1) == 0);
  CHECK(hf3fs_prep_io(&ior, &part, true, part.base, fd, 5 * MIB, MIB, NULL) >=
        0);
  CHECK(hf3fs_prep_io(&ior, &part, true, part.base + MIB, fd, 0, 4096, NULL) ==
        -EINVAL); /* outside the wrapped part */
  CHECK(WaitAll(&ior, cqes, 1) == 1 && cqes[0].result == MIB);
  CHECK(Matches(iov.base + 2 * MIB, MIB, 1, 5 * MIB));
  hf3fs_iovdestroy(&part);
  uint8_t unknown[16] = {1, 2, 3};
  CHECK(hf3fs_iovwrap(&part, iov.base, unknown, mnt, MIB, 0, -1) == -ENOENT);
  CHECK(hf3fs_iovopen(&part, (const uint8_t*)iov.id, mnt, MIB, 0, -1) ==
        -EOPNOTSUPP);
  hf3fs_iovunlink(&iov);
  CHECK(hf3fs_iovwrap(&part, iov.base, (const uint8_t*)iov.id, mnt, MIB, 0,
                      -1) == -ENOENT);
  CHECK(hf3fs_iovsync(&iov, 0) == 0);

  hf3fs_iovdestroy(&iov);
  hf3fs_iordestroy(&ior);
}

static void TestWrite(void) {
  struct hf3fs_ior ior;
  /* io_depth 4 with 1 entry: 3FS would wait for 4; FGDS starts the partial
   * batch after the timeout (ms). */
  CHECK(hf3fs_iorcreate3(&ior, mnt, 8, false, 4, 0, 1, -1) == 0);
  struct hf3fs_iov iov;
  CHECK(hf3fs_iovcreate(&iov, mnt, 2 * MIB, MIB, -1) == 0);
  for (uint64_t i = 0; i < MIB; ++i) iov.base[i] = PatternByte(2, i);
  CHECK(hf3fs_prep_io(&ior, &iov, false, iov.base, fd, FILE_BYTES, MIB, NULL) >=
        0);
  /* block_size 1 MiB: an entry may not cross a block. */
  CHECK(hf3fs_prep_io(&ior, &iov, false, iov.base + 4096, fd, 0, MIB, NULL) ==
        -EINVAL);
  struct hf3fs_cqe cqe;
  CHECK(WaitAll(&ior, &cqe, 1) == 1);
  CHECK(cqe.result == MIB);
  uint8_t* check = malloc(MIB);
  CHECK(pread(fd, check, MIB, FILE_BYTES) == (ssize_t)MIB);
  CHECK(Matches(check, MIB, 2, 0));
  free(check);
  hf3fs_iovdestroy(&iov);
  hf3fs_iordestroy(&ior);

  /* Other ring variants and flags. */
  CHECK(hf3fs_iorcreate(&ior, mnt, 4, true, 0, -1) == 0);
  hf3fs_iordestroy(&ior);
  CHECK(hf3fs_iorcreate2(&ior, mnt, 4, true, -2, 1, -1) == 0);
  hf3fs_iordestroy(&ior);
  CHECK(hf3fs_iorcreate4(&ior, mnt, 4, true, 0, 0, -1,
                         HF3FS_IOR_ALLOW_READ_UNCOMMITTED) == 0);
  hf3fs_iordestroy(&ior);
  CHECK(hf3fs_iorcreate4(&ior, mnt, 4, true, 0, 0, -1,
                         HF3FS_IOR_FORBID_READ_HOLES) == -EOPNOTSUPP);
  CHECK(hf3fs_iorcreate4(&ior, mnt, 4, true, 0, 0, -1, 64) == -EINVAL);
  CHECK(hf3fs_iorcreate4(&ior, mnt, 0, true, 0, 0, -1, 0) == -EINVAL);
  CHECK(hf3fs_iorcreate4(&ior, "/proc", 4, true, 0, 0, -1, 0) < 0);
  struct hf3fs_iov iov2;
  CHECK(hf3fs_iovcreate(&iov2, "/proc", MIB, 0, -1) < 0);
  CHECK(hf3fs_iovcreate(&iov2, mnt, 0, 0, -1) == -EINVAL);
}

static void TestGpuWithoutGpu(void) {
  if (hf3fs_gdr_available()) return; /* the GPU script covers that host */
  CHECK(hf3fs_gdr_device_count() == 0);
  struct hf3fs_iov iov;
  CHECK(hf3fs_iovcreate_device(&iov, mnt, MIB, 0, 0) == -ENOTSUP);
  int fake_device_memory;
  CHECK(hf3fs_iovwrap_device(&iov, &fake_device_memory, NULL, mnt, MIB, 0, 0) ==
        -ENOTSUP);
  uint8_t id[16] = {0};
  CHECK(hf3fs_iovopen_device(&iov, id, mnt, MIB, 0, 0) == -ENOTSUP);
}

static void TestNamespace(void) {
  char link_path[4300];
  snprintf(link_path, sizeof(link_path), "%s/hf3fs-link.bin", dir);
  CHECK(hf3fs_hardlink(path, link_path) == 0);
  struct stat a, b;
  CHECK(stat(path, &a) == 0 && stat(link_path, &b) == 0);
  CHECK(a.st_ino == b.st_ino && b.st_nlink == 2);
  CHECK(hf3fs_hardlink(path, link_path) == EEXIST);
  unlink(link_path);

  size_t start[1] = {4096}, end[1] = {3 * 4096};
  CHECK(hf3fs_punchhole(fd, 1, start, end, 0) == 0);
  uint8_t page[3 * 4096];
  CHECK(pread(fd, page, sizeof(page), 0) == (ssize_t)sizeof(page));
  CHECK(Matches(page, 4096, 1, 0));
  for (int i = 4096; i < 3 * 4096; ++i) CHECK(page[i] == 0);
  CHECK(hf3fs_punchhole(fd, 1, end, start, 0) == EINVAL);

  hf3fs_dereg_fd(fd);
  struct hf3fs_ior ior;
  struct hf3fs_iov iov;
  CHECK(hf3fs_iorcreate4(&ior, mnt, 4, true, 0, 0, -1, 0) == 0);
  CHECK(hf3fs_iovcreate(&iov, mnt, MIB, 0, -1) == 0);
  CHECK(hf3fs_prep_io(&ior, &iov, true, iov.base, fd, 0, 4096, NULL) ==
        -EBADF); /* deregistered */
  hf3fs_iovdestroy(&iov);
  hf3fs_iordestroy(&ior);
  close(fd);
  unlink(path);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIRECTORY_ON_FGDS_MOUNT\n", argv[0]);
    return 2;
  }
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  void (*steps[])(void) = {TestMounts, TestRead, TestWrite, TestGpuWithoutGpu,
                           TestNamespace};
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
    steps[i]();
    if (failures != 0) return 1;
  }
  printf("hf3fs_usrbio_test: ok\n");
  return 0;
}
