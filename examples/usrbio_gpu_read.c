/* examples/usrbio_gpu_read.c: read a file from an fgds mount straight into
 * GPU memory through a usrbio GPU iov (the bounce path: the daemon reads
 * into pinned staging memory, the library copies it to the device and
 * completes the read only once the copy is done).
 *
 *   cc -O2 usrbio_gpu_read.c -I<fgds>/include -L<build>/usrbio \
 *      -lfgds_usrbio -lstdc++ -lpthread -ldl -o usrbio_gpu_read
 *   ./usrbio_gpu_read /mnt/fgds/shard-0000.bin
 *
 * An application would use its own CUDA runtime (cudaMalloc); this example
 * loads the driver API with dlopen so that it builds without a toolkit.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fgds/usrbio.h"

typedef int (*cu_init_t)(unsigned);
typedef int (*cu_device_get_t)(int*, int);
typedef int (*cu_ctx_retain_t)(void**, int);
typedef int (*cu_ctx_set_t)(void*);
typedef int (*cu_mem_alloc_t)(uint64_t*, size_t);
typedef int (*cu_mem_free_t)(uint64_t);
typedef int (*cu_dtoh_t)(void*, uint64_t, size_t);

static int fail(const char* what, int err) {
  fprintf(stderr, "usrbio_gpu_read: %s: %s\n", what, strerror(-err));
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE_ON_FGDS_MOUNT\n", argv[0]);
    return 2;
  }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == NULL) {
    fprintf(stderr, "usrbio_gpu_read: no CUDA driver: %s\n", dlerror());
    return 77; /* skip */
  }
  cu_init_t cu_init = (cu_init_t)dlsym(cuda, "cuInit");
  cu_device_get_t cu_device_get = (cu_device_get_t)dlsym(cuda, "cuDeviceGet");
  cu_ctx_retain_t cu_ctx_retain =
      (cu_ctx_retain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain");
  cu_ctx_set_t cu_ctx_set = (cu_ctx_set_t)dlsym(cuda, "cuCtxSetCurrent");
  cu_mem_alloc_t cu_mem_alloc = (cu_mem_alloc_t)dlsym(cuda, "cuMemAlloc_v2");
  cu_mem_free_t cu_mem_free = (cu_mem_free_t)dlsym(cuda, "cuMemFree_v2");
  cu_dtoh_t cu_dtoh = (cu_dtoh_t)dlsym(cuda, "cuMemcpyDtoH_v2");
  int dev = 0;
  void* ctx = NULL;
  if (!cu_init || !cu_device_get || !cu_ctx_retain || !cu_ctx_set ||
      !cu_mem_alloc || !cu_mem_free || !cu_dtoh || cu_init(0) != 0 ||
      cu_device_get(&dev, 0) != 0 || cu_ctx_retain(&ctx, dev) != 0 ||
      cu_ctx_set(ctx) != 0) {
    fprintf(stderr, "usrbio_gpu_read: no usable GPU\n");
    return 77;
  }

  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    perror(argv[1]);
    return 1;
  }
  const uint64_t size = (uint64_t)st.st_size;
  uint64_t dev_ptr = 0;
  if (cu_mem_alloc(&dev_ptr, size) != 0) return fail("cuMemAlloc", -12);

  struct fgds_session session;
  int ret = fgds_session_open(&session, argv[1], NULL);
  if (ret < 0) return fail("session (is this an fgds mount?)", ret);
  /* The whole file in one entry: the library cuts it into chunks, at most
   * staging_bytes of them in flight (the default, 8 MiB: two 4 MiB chunks). */
  struct fgds_iov gpu_iov;
  ret = fgds_iov_wrap_gpu(&session, &gpu_iov, dev_ptr, size, NULL);
  if (ret < 0) return fail("wrap GPU memory", ret);
  /* Direct (storage -> GPU through the fgds module) or bounce, and why. */
  uint32_t reason = 0;
  int gpu_path = fgds_iov_gpu_path(&gpu_iov, &reason);
  printf("GPU iov: %s (reason %u)\n",
         gpu_path == (int)FGDS_PATH_DIRECT ? "direct" : "bounce", reason);
  struct fgds_ior ior;
  ret = fgds_ior_create(&session, &ior, NULL);
  if (ret < 0) return fail("ior", ret);
  int file = fgds_fd_register(&session, fd, 0);
  close(fd);
  if (file < 0) return fail("register", file);

  ret = fgds_prep_read(&ior, &gpu_iov, (void*)(uintptr_t)dev_ptr, file, 0, size,
                       1);
  if (ret < 0) return fail("prep", ret);
  fgds_ior_submit(&ior);
  struct fgds_cqe cqe;
  ret = fgds_ior_wait(&ior, &cqe, 1, 1, -1);
  if (ret < 0) return fail("wait", ret);
  if (cqe.result < 0) return fail("read", (int)cqe.result);
  /* The read's device copy has finished: any GPU work launched now sees
   * the data, on any stream. Here, check the first bytes from the host. */
  unsigned char head[16] = {0};
  cu_dtoh(head, dev_ptr, cqe.result < 16 ? (size_t)cqe.result : 16);
  printf("read %lld bytes into GPU memory (path %s), first byte 0x%02x\n",
         (long long)cqe.result,
         cqe.path == FGDS_PATH_DIRECT   ? "direct"
         : cqe.path == FGDS_PATH_BOUNCE ? "bounce"
                                        : "other",
         head[0]);

  fgds_fd_unregister(&session, file);
  fgds_ior_destroy(&ior);
  fgds_iov_destroy(&gpu_iov);
  fgds_session_close(&session);
  cu_mem_free(dev_ptr);
  return cqe.result == (int64_t)size ? 0 : 1;
}
