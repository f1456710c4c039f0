/* cufile_nogpu_test: the shipped libcufile.so.0 on a host without a GPU
 * (CI): it loads, and every call answers cuFile's errors instead of
 * crashing, as NVIDIA's library does there. Exits 77 (skip) where a GPU
 * is usable: the GPU script covers that host. */
#include <cufile.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

int main(void) {
  int version = 0;
  CHECK(cuFileGetVersion(&version).err == CU_FILE_SUCCESS);
  CHECK(version >= 1070);

  CUfileError_t status = cuFileDriverOpen();
  if (status.err == CU_FILE_SUCCESS) {
    fprintf(stderr, "a GPU is usable here: skipping the no-GPU checks\n");
    cuFileDriverClose();
    return 77;
  }
  CHECK(status.err == CU_FILE_CUDA_DRIVER_ERROR);
  CHECK(status.cu_err != 0);
  CHECK(cuFileUseCount() == 0);
  CHECK(cuFileDriverClose().err == CU_FILE_DRIVER_NOT_INITIALIZED);
  CUfileDrvProps_t props;
  CHECK(cuFileDriverGetProperties(&props).err ==
        CU_FILE_DRIVER_NOT_INITIALIZED);
  CHECK(cuFileDriverSetPollMode(false, 4).err ==
        CU_FILE_DRIVER_NOT_INITIALIZED);

  /* Registrations open the driver implicitly, and fail the same way. */
  char path[] = "/tmp/cufile-nogpu-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  CUfileDescr_t descr;
  memset(&descr, 0, sizeof(descr));
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = NULL;
  CHECK(cuFileHandleRegister(&fh, &descr).err == CU_FILE_CUDA_DRIVER_ERROR);
  void* buffer = malloc(4096);
  CHECK(cuFileBufRegister(buffer, 4096, 0).err == CU_FILE_CUDA_DRIVER_ERROR);
  CHECK(cuFileBufDeregister(buffer).err == CU_FILE_MEMORY_NOT_REGISTERED);

  /* I/O on handles that could not be registered. */
  CHECK(cuFileRead(NULL, buffer, 4096, 0, 0) == -CU_FILE_INVALID_VALUE);
  CHECK(cuFileRead((CUfileHandle_t)(uintptr_t)0x1234, buffer, 4096, 0, 0) ==
        -CU_FILE_HANDLE_NOT_REGISTERED);
  CHECK(cuFileWrite((CUfileHandle_t)(uintptr_t)0x1234, buffer, 4096, 0, 0) ==
        -CU_FILE_HANDLE_NOT_REGISTERED);
  cuFileHandleDeregister((CUfileHandle_t)(uintptr_t)0x1234);

  CUfileBatchHandle_t batch;
  CHECK(cuFileBatchIOSetUp(&batch, 4).err == CU_FILE_CUDA_DRIVER_ERROR);
  unsigned nr = 1;
  CUfileIOEvents_t event;
  CHECK(cuFileBatchIOGetStatus((CUfileBatchHandle_t)(uintptr_t)0x1234, 0, &nr,
                               &event, NULL)
            .err == CU_FILE_INVALID_VALUE);
  cuFileBatchIODestroy((CUfileBatchHandle_t)(uintptr_t)0x1234);

  CHECK(cuFileStreamRegister(NULL, 0).err == CU_FILE_CUDA_DRIVER_ERROR);
  size_t size = 4096;
  off_t file_offset = 0;
  off_t buf_offset = 0;
  ssize_t done = 0;
  CHECK(
      cuFileReadAsync(fh, buffer, &size, &file_offset, &buf_offset, &done, NULL)
          .err == CU_FILE_CUDA_DRIVER_ERROR);
  free(buffer);
  close(fd);
  printf("cufile_nogpu_test: ok\n");
  return 0;
}
