// File: dropin/hf3fs/gpu_memory.h
//
// The little CUDA the hf3fs drop-in needs beyond usrbio's GPU iovs: how
// many devices there are, and device memory for hf3fs_iovcreate_device,
// allocated in the device's primary context. CUDA only through fgds_cuda's
// dlopen'ed loader, so the library loads on hosts without a GPU.
#ifndef FGDS_DROPIN_HF3FS_GPU_MEMORY_H_
#define FGDS_DROPIN_HF3FS_GPU_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace fgds::hf3fs {

// The number of usable CUDA devices; 0 without a driver or device.
int DeviceCount();

// AllocDeviceMemory allocates `size` bytes on device `device` (retaining
// its primary context until FreeDeviceMemory). Returns 0, -ENOTSUP (no
// usable CUDA), -EINVAL (no such device) or -ENOMEM.
int AllocDeviceMemory(int device, size_t size, uint64_t* address);
void FreeDeviceMemory(int device, uint64_t address);

}  // namespace fgds::hf3fs

#endif  // FGDS_DROPIN_HF3FS_GPU_MEMORY_H_
