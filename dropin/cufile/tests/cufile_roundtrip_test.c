/* cufile_roundtrip_test: a cuFile program as kvikio and torch.cuda.gds
 * write one, run against the drop-in built on fake device memory
 * (libcufile_fakegpu.so) and a directory on an fgds mount (argv[1]).
 * Every call, with data checked byte for byte, and the error paths: bad
 * handles, unregistered buffers, double registration, batch limits.
 * Exit 0 on success, 1 on the first failed check (printed). */
#define _GNU_SOURCE
#include <cufile.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_gpu.h"

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

static unsigned char PatternByte(uint64_t i) {
  return (unsigned char)(((i + 1) * 0x9E3779B97F4A7C15ull) >> 56);
}

static int Matches(const unsigned char* buf, uint64_t len, uint64_t offset) {
  for (uint64_t i = 0; i < len; ++i) {
    if (buf[i] != PatternByte(offset + i)) return 0;
  }
  return 1;
}

static char path[4096];
static CUfileHandle_t fh;
static int fd = -1;
static unsigned char* src; /* fake device memory, registered */
static unsigned char* dst; /* fake device memory, registered */

static void TestDriver(void) {
  int version = 0;
  CHECK(cuFileGetVersion(&version).err == CU_FILE_SUCCESS);
  CHECK(version >= 1070);
  CHECK(cuFileGetVersion(NULL).err == CU_FILE_INVALID_VALUE);

  CUfileDrvProps_t props;
  CHECK(cuFileUseCount() == 0);
  CHECK(cuFileDriverGetProperties(&props).err ==
        CU_FILE_DRIVER_NOT_INITIALIZED);
  CHECK(cuFileDriverClose().err == CU_FILE_DRIVER_NOT_INITIALIZED);

  CHECK(cuFileDriverOpen().err == CU_FILE_SUCCESS);
  CHECK(cuFileUseCount() == 1);
  CHECK(cuFileDriverGetProperties(&props).err == CU_FILE_SUCCESS);
  CHECK(props.max_batch_io_size == 128);
  CHECK(props.fflags & (1u << CU_FILE_BATCH_IO_SUPPORTED));
  CHECK(props.fflags & (1u << CU_FILE_STREAMS_SUPPORTED));
  CHECK(cuFileDriverGetProperties(NULL).err == CU_FILE_INVALID_VALUE);

  CHECK(cuFileDriverSetMaxDirectIOSize(8192).err == CU_FILE_SUCCESS);
  CHECK(cuFileDriverSetPollMode(true, 8).err == CU_FILE_SUCCESS);
  CHECK(cuFileDriverSetMaxCacheSize(65536).err == CU_FILE_SUCCESS);
  CHECK(cuFileDriverSetMaxPinnedMemSize(1024).err == CU_FILE_SUCCESS);
  CHECK(cuFileDriverSetMaxCacheSize(0).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileDriverGetProperties(&props).err == CU_FILE_SUCCESS);
  CHECK(props.nvfs.max_direct_io_size == 8192);
  CHECK(props.nvfs.poll_thresh_size == 8);
  CHECK(props.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE));
  CHECK(props.max_device_cache_size == 65536);
  CHECK(props.max_device_pinned_mem_size == 1024);

  /* A second open nests. */
  CHECK(cuFileDriverOpen().err == CU_FILE_SUCCESS);
  CHECK(cuFileUseCount() == 2);
  CHECK(cuFileDriverClose_v2().err == CU_FILE_SUCCESS);
  CHECK(cuFileUseCount() == 1);
}

static void TestHandles(void) {
  CUfileDescr_t descr;
  memset(&descr, 0, sizeof(descr));
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0 && errno == EINVAL)
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  descr.handle.fd = fd;
  CHECK(cuFileHandleRegister(&fh, &descr).err == CU_FILE_SUCCESS);

  CUfileHandle_t other;
  CHECK(cuFileHandleRegister(NULL, &descr).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileHandleRegister(&other, NULL).err == CU_FILE_INVALID_VALUE);
  CUfileDescr_t bad = descr;
  bad.handle.fd = -1;
  CHECK(cuFileHandleRegister(&other, &bad).err == CU_FILE_INVALID_VALUE);
  bad = descr;
  bad.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
  CHECK(cuFileHandleRegister(&other, &bad).err == CU_FILE_IO_NOT_SUPPORTED);
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  bad = descr;
  bad.handle.fd = pipe_fds[0];
  CHECK(cuFileHandleRegister(&other, &bad).err == CU_FILE_INVALID_FILE_TYPE);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

static void TestBuffers(void) {
  src = fgds_fake_gpu_alloc(FILE_BYTES);
  dst = fgds_fake_gpu_alloc(FILE_BYTES);
  CHECK(src != NULL && dst != NULL);
  for (uint64_t i = 0; i < FILE_BYTES; ++i) src[i] = PatternByte(i);
  CHECK(cuFileBufRegister(src, FILE_BYTES, 0).err == CU_FILE_SUCCESS);
  CHECK(cuFileBufRegister(dst, FILE_BYTES, 0).err == CU_FILE_SUCCESS);
  CHECK(cuFileBufRegister(src, FILE_BYTES, 0).err ==
        CU_FILE_MEMORY_ALREADY_REGISTERED);
  CHECK(cuFileBufRegister(NULL, FILE_BYTES, 0).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBufRegister(dst + MIB, 0, 0).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBufDeregister(dst + MIB).err == CU_FILE_MEMORY_NOT_REGISTERED);
}

static void TestReadWrite(void) {
  CHECK(cuFileWrite(fh, src, FILE_BYTES, 0, 0) == (ssize_t)FILE_BYTES);
  CHECK(cuFileRead(fh, dst, FILE_BYTES, 0, 0) == (ssize_t)FILE_BYTES);
  CHECK(memcmp(src, dst, FILE_BYTES) == 0);

  /* Unaligned file offset, buffer offset and size. */
  memset(dst, 0, FILE_BYTES);
  CHECK(cuFileRead(fh, dst, 12345, 777, 100) == 12345);
  CHECK(Matches(dst + 100, 12345, 777));
  CHECK(dst[99] == 0 && dst[100 + 12345] == 0);

  /* Short only at end of file. */
  CHECK(cuFileRead(fh, dst, MIB, FILE_BYTES - 4096, 0) == 4096);
  CHECK(Matches(dst, 4096, FILE_BYTES - 4096));
  CHECK(cuFileRead(fh, dst, MIB, FILE_BYTES, 0) == 0);

  /* Unregistered device memory and host memory work too (cuFile 1.7+). */
  unsigned char* loose = fgds_fake_gpu_alloc(MIB);
  CHECK(cuFileRead(fh, loose, MIB, 3 * MIB, 0) == (ssize_t)MIB);
  CHECK(Matches(loose, MIB, 3 * MIB));
  fgds_fake_gpu_free(loose);
  unsigned char* host = malloc(MIB + 10);
  CHECK(cuFileRead(fh, host, MIB, 5 * MIB + 3, 10) == (ssize_t)MIB);
  CHECK(Matches(host + 10, MIB, 5 * MIB + 3));
  free(host);

  /* A write at an unaligned offset from an unaligned buffer offset. */
  CHECK(cuFileWrite(fh, src, 4000, 6 * MIB + 5, 6 * MIB + 5) == 4000);
  CHECK(cuFileRead(fh, dst, 8192, 6 * MIB, 0) == 8192);
  CHECK(Matches(dst, 8192, 6 * MIB));

  /* Reads into a registered buffer must stay inside it. */
  CHECK(cuFileRead(fh, src, MIB, 0, FILE_BYTES) == -CU_FILE_INVALID_VALUE);
}

/* kvikio's pattern: a thread pool issuing cuFileRead on one handle, each
 * thread its own piece of one registered buffer. */
struct Piece {
  size_t index;
  ssize_t result;
};

static void* ReadPiece(void* arg) {
  struct Piece* piece = arg;
  const off_t offset = (off_t)(piece->index * MIB);
  piece->result = cuFileRead(fh, dst, MIB, offset, offset);
  return NULL;
}

static void TestThreads(void) {
  memset(dst, 0, FILE_BYTES);
  pthread_t threads[8];
  struct Piece pieces[8];
  for (size_t i = 0; i < 8; ++i) {
    pieces[i].index = i;
    pieces[i].result = 0;
    CHECK(pthread_create(&threads[i], NULL, ReadPiece, &pieces[i]) == 0);
  }
  for (size_t i = 0; i < 8; ++i) pthread_join(threads[i], NULL);
  for (size_t i = 0; i < 8; ++i) CHECK(pieces[i].result == (ssize_t)MIB);
  CHECK(cuFileRead(fh, src, FILE_BYTES, 0, 0) == (ssize_t)FILE_BYTES);
  CHECK(memcmp(src, dst, FILE_BYTES) == 0);
}

static void TestBadHandles(void) {
  CHECK(cuFileRead(NULL, dst, 4096, 0, 0) == -CU_FILE_INVALID_VALUE);
  CHECK(IS_CUFILE_ERR((int)cuFileRead(NULL, dst, 4096, 0, 0)));
  CHECK(strcmp(CUFILE_ERRSTR(-CU_FILE_HANDLE_NOT_REGISTERED),
               "file descriptor is not registered") == 0);
  CHECK(cuFileRead((CUfileHandle_t)(uintptr_t)0x1234, dst, 4096, 0, 0) ==
        -CU_FILE_HANDLE_NOT_REGISTERED);
  CHECK(cuFileWrite(fh, NULL, 4096, 0, 0) == -CU_FILE_INVALID_VALUE);

  /* A system error comes back as -1 with errno: writing a read-only fd. */
  int ro = open(path, O_RDONLY);
  CHECK(ro >= 0);
  CUfileDescr_t descr;
  memset(&descr, 0, sizeof(descr));
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = ro;
  CUfileHandle_t ro_fh;
  CHECK(cuFileHandleRegister(&ro_fh, &descr).err == CU_FILE_SUCCESS);
  errno = 0;
  CHECK(cuFileWrite(ro_fh, src, 4096, 0, 0) == -1);
  CHECK(errno == EBADF);
  cuFileHandleDeregister(ro_fh);
  CHECK(cuFileRead(ro_fh, dst, 4096, 0, 0) == -CU_FILE_HANDLE_NOT_REGISTERED);
  cuFileHandleDeregister(ro_fh); /* twice: ignored, as in cuFile */
  close(ro);
}

static void TestBatch(void) {
  CUfileBatchHandle_t batch;
  CHECK(cuFileBatchIOSetUp(&batch, 0).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBatchIOSetUp(&batch, 129).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBatchIOSetUp(NULL, 4).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBatchIOSetUp(&batch, 6).err == CU_FILE_SUCCESS);

  memset(dst, 0, FILE_BYTES);
  CUfileIOParams_t params[6];
  memset(params, 0, sizeof(params));
  for (int i = 0; i < 6; ++i) {
    params[i].mode = CUFILE_BATCH;
    params[i].fh = fh;
    params[i].opcode = CUFILE_READ;
    params[i].cookie = (void*)(uintptr_t)(100 + i);
    params[i].u.batch.devPtr_base = dst;
    params[i].u.batch.file_offset = (off_t)i * MIB;
    params[i].u.batch.devPtr_offset = (off_t)i * MIB;
    params[i].u.batch.size = MIB;
  }
  /* Entry 5 reads into host memory. */
  unsigned char* host = malloc(MIB);
  params[5].u.batch.devPtr_base = host;
  params[5].u.batch.devPtr_offset = 0;

  CUfileIOParams_t bad = params[0];
  bad.fh = (CUfileHandle_t)(uintptr_t)0x1234;
  CHECK(cuFileBatchIOSubmit(batch, 1, &bad, 0).err ==
        CU_FILE_HANDLE_NOT_REGISTERED);
  bad = params[0];
  bad.opcode = (CUfileOpcode_t)7;
  CHECK(cuFileBatchIOSubmit(batch, 1, &bad, 0).err == CU_FILE_INVALID_VALUE);
  CHECK(cuFileBatchIOSubmit(batch, 7, params, 0).err == CU_FILE_BATCH_FULL);

  CHECK(cuFileBatchIOSubmit(batch, 6, params, 0).err == CU_FILE_SUCCESS);
  unsigned got = 0;
  int seen[6] = {0};
  while (got < 6) {
    CUfileIOEvents_t events[6];
    unsigned nr = 6;
    struct timespec timeout = {5, 0};
    CHECK(cuFileBatchIOGetStatus(batch, 1, &nr, events, &timeout).err ==
          CU_FILE_SUCCESS);
    CHECK(nr >= 1);
    for (unsigned i = 0; i < nr; ++i) {
      int index = (int)((uintptr_t)events[i].cookie - 100);
      CHECK(index >= 0 && index < 6 && !seen[index]);
      seen[index] = 1;
      CHECK(events[i].status == CUFILE_COMPLETE);
      CHECK(events[i].ret == MIB);
    }
    got += nr;
  }
  CHECK(memcmp(dst, src, 5 * MIB) == 0);
  CHECK(Matches(host, MIB, 5 * MIB));
  free(host);

  /* Nothing left: a zero-wait poll reports nothing. */
  unsigned nr = 6;
  CUfileIOEvents_t events[6];
  struct timespec zero = {0, 0};
  CHECK(cuFileBatchIOGetStatus(batch, 0, &nr, events, &zero).err ==
        CU_FILE_SUCCESS);
  CHECK(nr == 0);
  /* Cancel waits for what is in flight and drops its events. */
  params[0].opcode = CUFILE_WRITE;
  CHECK(cuFileBatchIOSubmit(batch, 1, params, 0).err == CU_FILE_SUCCESS);
  CHECK(cuFileBatchIOCancel(batch).err == CU_FILE_SUCCESS);
  nr = 6;
  CHECK(cuFileBatchIOGetStatus(batch, 0, &nr, events, &zero).err ==
        CU_FILE_SUCCESS);
  CHECK(nr == 0); /* cancelled: waited for, not reported */
  cuFileBatchIODestroy(batch);
  nr = 6;
  CHECK(cuFileBatchIOGetStatus(batch, 0, &nr, events, &zero).err ==
        CU_FILE_INVALID_VALUE);
}

static void TestStream(void) {
  CUstream stream = NULL; /* the default stream */
  CHECK(cuFileStreamRegister(stream, 0xF).err == CU_FILE_SUCCESS);
  CHECK(cuFileStreamRegister(stream, 0x10).err == CU_FILE_INVALID_VALUE);
  memset(dst, 0, FILE_BYTES);
  size_t size = 2 * MIB;
  off_t file_offset = MIB;
  off_t buf_offset = 4096;
  ssize_t done = 0;
  CHECK(
      cuFileReadAsync(fh, dst, &size, &file_offset, &buf_offset, &done, stream)
          .err == CU_FILE_SUCCESS);
  CHECK(done == (ssize_t)(2 * MIB));
  CHECK(Matches(dst + 4096, 2 * MIB, MIB));
  ssize_t written = 0;
  CHECK(cuFileWriteAsync(fh, dst, &size, &file_offset, &buf_offset, &written,
                         stream)
            .err == CU_FILE_SUCCESS);
  CHECK(written == (ssize_t)(2 * MIB));
  CHECK(cuFileReadAsync(fh, dst, NULL, &file_offset, &buf_offset, &done, stream)
            .err == CU_FILE_INVALID_VALUE);
  CUfileHandle_t forged = (CUfileHandle_t)(uintptr_t)0x1234;
  CHECK(cuFileReadAsync(forged, dst, &size, &file_offset, &buf_offset, &done,
                        stream)
            .err == CU_FILE_SUCCESS);
  CHECK(done == -CU_FILE_HANDLE_NOT_REGISTERED);
  CHECK(cuFileStreamDeregister(stream).err == CU_FILE_SUCCESS);
  CHECK(cuFileStreamDeregister(stream).err == CU_FILE_INVALID_VALUE);
}

static void TestClose(void) {
  CHECK(cuFileBufDeregister(src).err == CU_FILE_SUCCESS);
  CHECK(cuFileBufDeregister(src).err == CU_FILE_MEMORY_NOT_REGISTERED);
  CHECK(cuFileBufDeregister(dst).err == CU_FILE_SUCCESS);
  cuFileHandleDeregister(fh);
  CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS);
  CHECK(cuFileUseCount() == 0);
  /* Registering again opens the driver implicitly, as torch relies on. */
  CUfileDescr_t descr;
  memset(&descr, 0, sizeof(descr));
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CHECK(cuFileHandleRegister(&fh, &descr).err == CU_FILE_SUCCESS);
  CHECK(cuFileUseCount() == 1);
  CHECK(cuFileRead(fh, dst, MIB, 0, 0) == (ssize_t)MIB);
  CHECK(Matches(dst, MIB, 0));
  cuFileHandleDeregister(fh);
  CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS);
  close(fd);
  fgds_fake_gpu_free(src);
  fgds_fake_gpu_free(dst);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIRECTORY_ON_FGDS_MOUNT\n", argv[0]);
    return 2;
  }
  snprintf(path, sizeof(path), "%s/cufile-roundtrip.bin", argv[1]);
  void (*steps[])(void) = {TestDriver,    TestHandles, TestBuffers,
                           TestReadWrite, TestThreads, TestBadHandles,
                           TestBatch,     TestStream,  TestClose};
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
    steps[i]();
    if (failures != 0) return 1;
  }
  unlink(path);
  printf("cufile_roundtrip_test: ok\n");
  return 0;
}
