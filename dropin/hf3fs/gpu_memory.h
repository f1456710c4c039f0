// File: dropin/hf3fs/gpu_memory.h
//
// The GPU side of the hf3fs drop-in, behind one narrow interface so that
// the same hf3fs code runs on CUDA (the shipped libhf3fs_api_shared.so,
// gpu_memory.cc: CUDA only through fgds_cuda's dlopen'ed loader, so the
// library loads on hosts without a GPU) and on fake device memory (the CPU
// tests' libhf3fs_api_shared_fakegpu.so, tests/fake_gpu_memory.cc).
// Exactly one implementation is linked into each library.
//
// Errors are -errno.
#ifndef FGDS_DROPIN_HF3FS_GPU_MEMORY_H_
#define FGDS_DROPIN_HF3FS_GPU_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "fgds/usrbio.h"

namespace fgds::hf3fs {

// The number of usable CUDA devices; 0 without a driver or device.
int DeviceCount();

// AllocDeviceMemory allocates `size` bytes on device `device` (retaining
// its primary context until FreeDeviceMemory). Returns 0, -ENOTSUP (no
// usable CUDA), -EINVAL (no such device) or -ENOMEM.
int AllocDeviceMemory(int device, size_t size, uint64_t* address);
void FreeDeviceMemory(int device, uint64_t address);

// WrapDeviceMemory makes `iov` a usrbio GPU iov of [address, address +
// size) on device `device` (fgds_iov_wrap_gpu on the device's primary
// context). `address` may lie anywhere inside its allocation (a tensor
// that is a slice of a larger block). -ENODEV without a usable device.
int WrapDeviceMemory(fgds_session* session, fgds_iov* iov, uint64_t address,
                     uint64_t size, int device);

// SynchronizeDevice waits until all work queued on device `device`'s
// primary context, on every stream, has finished (3FS's hf3fs_iovsync:
// cudaSetDevice + cudaDeviceSynchronize). 0, -EINVAL (no such device), or
// the device's failure.
int SynchronizeDevice(int device);

}  // namespace fgds::hf3fs

#endif  // FGDS_DROPIN_HF3FS_GPU_MEMORY_H_
