// File: tests/gpu/gpu_kernels.h
//
// Two small device kernels for the GPU tests, as PTX JIT-compiled by the
// driver (no nvcc at build time, as everything else here): `spin` keeps a
// GPU busy for a while (a test proves another GPU's I/O does not wait for
// it), and `checksum` sums the bytes of a device range where they are, so
// that data is checked on the device it landed on, not after a copy
// through some other context.
//
// The module entry points (cuModuleLoadData, cuLaunchKernel...) are test
// needs only, so they are looked up here rather than in the library's
// CudaApi.
#ifndef FGDS_TESTS_GPU_GPU_KERNELS_H_
#define FGDS_TESTS_GPU_GPU_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "usrbio/cuda/cuda_types.h"

namespace fgds::testing {

// HostChecksum is what `checksum` computes: the sum over i of
// bytes[i] * (i % 65521 + 1), modulo 2^64 (a byte moved or swapped
// changes it).
uint64_t HostChecksum(const uint8_t* bytes, uint64_t n);

// GpuKernels loads the kernels into `context` (made current only for the
// calls, the thread's own context restored afterwards).
class GpuKernels {
 public:
  explicit GpuKernels(cuda::CUcontext context);
  ~GpuKernels();
  GpuKernels(const GpuKernels&) = delete;
  GpuKernels& operator=(const GpuKernels&) = delete;

  // ok() false: why() says what failed (no driver entry point, JIT error).
  bool ok() const { return spin_ != nullptr; }
  const std::string& why() const { return why_; }

  // Spin queues a one-thread kernel on `stream` that runs `ns` nanoseconds
  // of the GPU's global timer.
  bool Spin(cuda::CUstream stream, uint64_t ns);
  // Checksum computes HostChecksum of [dev, dev + n) on the device and
  // waits for it; false (and why()) when the launch failed.
  bool Checksum(uint64_t dev, uint64_t n, uint64_t* sum);

 private:
  cuda::CUcontext context_;
  void* module_ = nullptr;
  void* spin_ = nullptr;
  void* checksum_ = nullptr;
  std::string why_;
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_GPU_GPU_KERNELS_H_
