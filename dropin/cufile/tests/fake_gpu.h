/* File: dropin/cufile/tests/fake_gpu.h
 *
 * The CPU tests' stand-in for cudaMalloc/cudaFree: libcufile_fakegpu.so
 * (the cuFile drop-in built on fake device memory, tests/fake_backend.cc)
 * exports these two calls. "Device memory" is host memory the fake device
 * knows, so tests check bytes with memcmp; every other address is host
 * memory to the library, as pageable memory is to CUDA.
 */
#ifndef FGDS_DROPIN_CUFILE_TESTS_FAKE_GPU_H_
#define FGDS_DROPIN_CUFILE_TESTS_FAKE_GPU_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void* fgds_fake_gpu_alloc(size_t bytes);
void fgds_fake_gpu_free(void* ptr);

#ifdef __cplusplus
}
#endif

#endif /* FGDS_DROPIN_CUFILE_TESTS_FAKE_GPU_H_ */
