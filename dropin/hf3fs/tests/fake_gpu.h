/* File: dropin/hf3fs/tests/fake_gpu.h
 *
 * The CPU tests' stand-in for cudaMalloc/cudaFree and for the device's
 * work queue: libhf3fs_api_shared_fakegpu.so (the hf3fs drop-in on fake
 * device memory, tests/fake_gpu_memory.cc) exports these calls. "Device
 * memory" is host memory the fake device knows, so tests check its bytes
 * with memcmp.
 */
#ifndef FGDS_DROPIN_HF3FS_TESTS_FAKE_GPU_H_
#define FGDS_DROPIN_HF3FS_TESTS_FAKE_GPU_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void* fgds_fake_gpu_alloc(size_t bytes);
void fgds_fake_gpu_free(void* ptr);
/* How many times the device was synchronized (hf3fs_iovsync). */
long fgds_fake_gpu_syncs(void);

#ifdef __cplusplus
}
#endif

#endif /* FGDS_DROPIN_HF3FS_TESTS_FAKE_GPU_H_ */
