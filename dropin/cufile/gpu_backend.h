// File: dropin/cufile/gpu_backend.h
//
// GpuBackend: what the cuFile drop-in needs from the GPU side, behind one
// narrow interface, so that the same cuFile code runs on CUDA (the shipped
// libcufile.so.0, cuda_backend.cc) and on fake device memory (the CPU
// tests' libcufile_fakegpu.so, tests/fake_backend.cc). Exactly one
// implementation is linked into each library and provides Backend().
//
// Errors are -errno; `cu_result` (when not null) receives the CUDA driver
// error behind a failure, for CUfileError_t.cu_err.
#ifndef FGDS_DROPIN_CUFILE_GPU_BACKEND_H_
#define FGDS_DROPIN_CUFILE_GPU_BACKEND_H_

#include <cstdint>
#include <string>

#include "fgds/fgds.h"

namespace fgds::cufile {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // Probe: 0 when a CUDA driver and at least one device are usable, else
  // -ENODEV (no driver or device) or -ENOTSUP (driver too old), with
  // `message` saying why. Cheap after the first call.
  virtual int Probe(int* cu_result, std::string* message) = 0;

  // DeviceOf: 0 and the device ordinal when `address` is device memory;
  // -EFAULT when it is host memory (pageable or pinned), which cuFile
  // (1.7+) reads and writes with plain pread/pwrite.
  virtual int DeviceOf(uint64_t address, int* device) = 0;

  // OpenDriver opens a libfgds driver on device `device` (its primary
  // context, the one CUDA's runtime and PyTorch use).
  virtual int OpenDriver(int device, fgds_driver** driver,
                         std::string* message) = 0;

  // SynchronizeStream waits until everything queued on `stream` (a
  // CUstream; 0 = the legacy default stream) has finished.
  virtual int SynchronizeStream(void* stream, int* cu_result) = 0;
};

// The process's backend (defined by the one implementation linked in).
GpuBackend& Backend();

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_GPU_BACKEND_H_
