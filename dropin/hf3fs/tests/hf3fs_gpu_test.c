/* hf3fs_gpu_test: 3FS's GDR calls (hf3fs_iovwrap_device,
 * hf3fs_iovcreate_device, hf3fs_iovsync) as a 3FS program makes them, and
 * as tests/gpu/dropin_on_device.sh's hf3fs_gpu phase does on the GPU
 * machine, here on the fake device memory of libhf3fs_api_shared_fakegpu.so
 * and a directory of a real fgds mount (argv[1]): the whole bounce
 * pipeline (staging, chunks, device copies) and the daemon run for real.
 *
 * The wrapped buffer is a slice in the middle of a larger allocation, not
 * page aligned (a tensor of PyTorch's caching allocator is one), and one
 * entry starts at an odd offset: every byte of the slice must be the
 * file's, every byte around it untouched.
 * Exit 0 on success, 1 on the first failed check (printed). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hf3fs_usrbio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"

#define MIB ((size_t)1 << 20)
#define FILE_BYTES (32 * MIB)
#define SEED 3

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

/* The first byte of buf[0, len) that is not the file's byte at `offset`
 * onwards, or -1. */
static long long FirstMismatch(const uint8_t* buf, size_t len,
                               uint64_t offset) {
  for (size_t i = 0; i < len; ++i) {
    if (buf[i] != PatternByte(SEED, offset + i)) return (long long)i;
  }
  return -1;
}

static int AllBytes(const uint8_t* buf, size_t len, uint8_t value) {
  for (size_t i = 0; i < len; ++i) {
    if (buf[i] != value) return 0;
  }
  return 1;
}

static char dir[4096];
static char mnt[256];
static char path[4200];
static char out_path[4200];

/* Submits and reaps `n` entries; returns how many completed. */
static int WaitAll(struct hf3fs_ior* ior, struct hf3fs_cqe* cqes, int n) {
  if (hf3fs_submit_ios(ior) != 0) return -1;
  int got = 0;
  while (got < n) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    int r = hf3fs_wait_for_ios(ior, cqes + got, n - got, 1, &deadline);
    if (r <= 0) return got;
    got += r;
  }
  return got;
}

static void WriteFile(void) {
  CHECK(hf3fs_extract_mount_point(mnt, sizeof(mnt), dir) > 1);
  snprintf(path, sizeof(path), "%s/hf3fs-gpu.bin", dir);
  snprintf(out_path, sizeof(out_path), "%s/hf3fs-gpu-out.bin", dir);
  uint8_t* bytes = malloc(FILE_BYTES);
  CHECK(bytes != NULL);
  for (size_t i = 0; i < FILE_BYTES; ++i) bytes[i] = PatternByte(SEED, i);
  int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t n = w >= 0 ? write(w, bytes, FILE_BYTES) : -1;
  free(bytes);
  if (w >= 0) close(w);
  CHECK(n == (ssize_t)FILE_BYTES);
}

/* The device script's reads, on a slice of a larger allocation. */
static void TestWrappedSliceAndCreated(void) {
  /* The allocation: 4 MiB + 512 before the slice, 4 MiB - 512 after it,
   * all 0xA5 (a guard that no read may touch). */
  const size_t block_bytes = FILE_BYTES + 8 * MIB;
  uint8_t* block = fgds_fake_gpu_alloc(block_bytes);
  CHECK(block != NULL);
  memset(block, 0xA5, block_bytes);
  uint8_t* dst = block + 4 * MIB + 512;

  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK(hf3fs_reg_fd(fd, 0) <= 0);
  struct hf3fs_ior ior;
  CHECK(hf3fs_iorcreate4(&ior, mnt, 16, true, 0, 0, -1, 0) == 0);

  CHECK(hf3fs_gdr_available() && hf3fs_gdr_device_count() == 1);
  struct hf3fs_iov wrapped, created;
  CHECK(hf3fs_iovwrap_device(&wrapped, dst, NULL, mnt, FILE_BYTES, 0, 0) == 0);
  CHECK(hf3fs_iov_mem_type(&wrapped) == HF3FS_MEM_DEVICE);
  CHECK(hf3fs_iov_device_id(&wrapped) == 0);
  CHECK(wrapped.base == dst && wrapped.size == FILE_BYTES);
  CHECK(hf3fs_iovcreate_device(&created, mnt, 8 * MIB, 0, 0) == 0);
  CHECK(hf3fs_iov_mem_type(&created) == HF3FS_MEM_DEVICE);

  /* Eight 4 MiB pieces; the last one as two entries, the second starting
   * 123 bytes in (an unaligned head, in the file and in memory). */
  struct {
    size_t offset, len;
  } pieces[9];
  int n = 0;
  for (int i = 0; i < 7; ++i) {
    pieces[n].offset = (size_t)i * 4 * MIB;
    pieces[n++].len = 4 * MIB;
  }
  pieces[n].offset = 28 * MIB;
  pieces[n++].len = 123;
  pieces[n].offset = 28 * MIB + 123;
  pieces[n++].len = 4 * MIB - 123;
  for (int i = 0; i < n; ++i) {
    CHECK(hf3fs_prep_io(&ior, &wrapped, true, dst + pieces[i].offset, fd,
                        pieces[i].offset, pieces[i].len,
                        (void*)(uintptr_t)(1000 + i)) >= 0);
  }
  CHECK(hf3fs_prep_io(&ior, &created, true, created.base, fd, MIB, 8 * MIB,
                      (void*)(uintptr_t)2000) >= 0);
  /* Outside the wrapped slice (though inside its allocation). */
  CHECK(hf3fs_prep_io(&ior, &wrapped, true, dst - 512, fd, 0, 4096, NULL) ==
        -EINVAL);
  CHECK(hf3fs_prep_io(&ior, &wrapped, true, dst + FILE_BYTES - 4096, fd, 0,
                      8192, NULL) == -EINVAL);

  struct hf3fs_cqe cqes[16];
  CHECK(WaitAll(&ior, cqes, n + 1) == n + 1);
  for (int k = 0; k < n + 1; ++k) {
    const uintptr_t tag = (uintptr_t)cqes[k].userdata;
    if (tag == 2000) {
      CHECK(cqes[k].result == (int64_t)(8 * MIB));
    } else {
      CHECK(tag >= 1000 && tag < 1000 + (uintptr_t)n);
      CHECK(cqes[k].result == (int64_t)pieces[tag - 1000].len);
    }
  }
  const long syncs = fgds_fake_gpu_syncs();
  CHECK(hf3fs_iovsync(&wrapped, 1) == 0);
  CHECK(fgds_fake_gpu_syncs() == syncs + 1); /* a device-wide fence */

  const long long bad = FirstMismatch(dst, FILE_BYTES, 0);
  if (bad >= 0) {
    fprintf(stderr, "wrapped slice: byte %lld is not the file's\n", bad);
  }
  CHECK(bad < 0);
  CHECK(AllBytes(block, 4 * MIB + 512, 0xA5));
  CHECK(AllBytes(dst + FILE_BYTES, 4 * MIB - 512, 0xA5));
  CHECK(FirstMismatch(created.base, 8 * MIB, MIB) < 0);

  /* The created iov's bytes, written back to a file from "GPU memory"
   * through a write ring. */
  int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(out >= 0);
  CHECK(hf3fs_reg_fd(out, 0) <= 0);
  struct hf3fs_ior wior;
  CHECK(hf3fs_iorcreate4(&wior, mnt, 4, false, 0, 0, -1, 0) == 0);
  CHECK(hf3fs_iovsync(&created, 0) == 0); /* GPU writes done before I/O */
  CHECK(hf3fs_prep_io(&wior, &created, false, created.base, out, 0, 8 * MIB,
                      NULL) >= 0);
  CHECK(WaitAll(&wior, cqes, 1) == 1 && cqes[0].result == (int64_t)(8 * MIB));
  uint8_t* back = malloc(8 * MIB);
  CHECK(back != NULL);
  const ssize_t got = pread(out, back, 8 * MIB, 0);
  const long long wrong = got == (ssize_t)(8 * MIB)
                              ? FirstMismatch(back, 8 * MIB, MIB)
                              : (long long)got;
  free(back);
  CHECK(wrong < 0);

  hf3fs_dereg_fd(out);
  hf3fs_iordestroy(&wior);
  close(out);
  unlink(out_path);
  hf3fs_iovdestroy(&created);
  hf3fs_iovdestroy(&wrapped);
  hf3fs_iordestroy(&ior);
  hf3fs_dereg_fd(fd);
  close(fd);
  /* A wrap never owns its memory: the slice's bytes are still there. */
  CHECK(FirstMismatch(dst, FILE_BYTES, 0) < 0);
  fgds_fake_gpu_free(block);
}

static void TestWrapErrorsAndSync(void) {
  uint8_t* block = fgds_fake_gpu_alloc(MIB);
  CHECK(block != NULL);
  struct hf3fs_iov iov;
  /* Past the end of its allocation; not device memory; block_size. */
  CHECK(hf3fs_iovwrap_device(&iov, block + 4096, NULL, mnt, MIB, 0, 0) != 0);
  static uint8_t host[4096];
  CHECK(hf3fs_iovwrap_device(&iov, host, NULL, mnt, sizeof(host), 0, 0) != 0);
  CHECK(hf3fs_iovwrap_device(&iov, block, NULL, mnt, MIB, 4096, 0) == -EINVAL);
  CHECK(hf3fs_iovwrap_device(&iov, NULL, NULL, mnt, MIB, 0, 0) == -EINVAL);
  /* The id 3FS publishes the wrap under is kept. */
  uint8_t id[16];
  for (int i = 0; i < 16; ++i) id[i] = (uint8_t)(i * 7);
  CHECK(hf3fs_iovwrap_device(&iov, block, id, mnt, MIB, 0, 0) == 0);
  CHECK(memcmp(iov.id, id, sizeof(id)) == 0);
  hf3fs_iovdestroy(&iov);

  /* iovsync: a no-op for host iovs, -EINVAL without an iov. */
  const long syncs = fgds_fake_gpu_syncs();
  CHECK(hf3fs_iovcreate(&iov, mnt, MIB, 0, -1) == 0);
  CHECK(hf3fs_iovsync(&iov, 0) == 0);
  CHECK(fgds_fake_gpu_syncs() == syncs);
  hf3fs_iovdestroy(&iov);
  CHECK(hf3fs_iovsync(NULL, 0) == -EINVAL);
  fgds_fake_gpu_free(block);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIRECTORY_ON_FGDS_MOUNT\n", argv[0]);
    return 2;
  }
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  void (*steps[])(void) = {WriteFile, TestWrappedSliceAndCreated,
                           TestWrapErrorsAndSync};
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
    steps[i]();
    if (failures != 0) return 1;
  }
  unlink(path);
  printf("hf3fs_gpu_test: ok\n");
  return 0;
}
