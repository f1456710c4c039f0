// File: usrbio/cuda/cuda_memory.h
//
// Questions about device memory and devices that both GPU paths ask: which
// allocation an address lies in, whether the device can export dma-bufs,
// its PCI address, and the dma-buf export itself (for the kernel module and
// the daemon's GPU iovs).
#ifndef FGDS_USRBIO_CUDA_CUDA_MEMORY_H_
#define FGDS_USRBIO_CUDA_CUDA_MEMORY_H_

#include <cstdint>
#include <string>

#include "usrbio/cuda/cuda_types.h"

namespace fgds::cuda {

struct CudaApi;

// What CUDA says about a device address.
struct DevicePointerInfo {
  CUdeviceptr alloc_base = 0;  // the allocation holding the address
  uint64_t alloc_size = 0;
  // Process-wide unique per allocation: an address freed and allocated
  // again gets a new id, which is how a freed buffer is told apart from a
  // new one at the same address.
  uint64_t buffer_id = 0;
  int device_ordinal = -1;
  bool is_managed = false;
};

// QueryDevicePointer fills `info` for `ptr`. Returns 0, or -EFAULT with a
// message when `ptr` is not device memory (host memory, freed, unknown).
// Needs a current context on the calling thread.
int QueryDevicePointer(const CudaApi& api, CUdeviceptr ptr,
                       DevicePointerInfo* info, std::string* message);

// BufferIdOf returns 0 and sets *buffer_id, or -EFAULT when `ptr` is no
// longer inside any allocation. The cheap check before each device copy.
int BufferIdOf(const CudaApi& api, CUdeviceptr ptr, uint64_t* buffer_id);

// Where a device buffer lives: the device it is on and the context it was
// allocated in (null for memory that belongs to no context, such as
// cuMemCreate/cuMemMap allocations).
struct PointerHome {
  int device_ordinal = -1;
  CUcontext context = nullptr;
};

// FindPointerHome fills `home` for `ptr` whatever context is current on the
// calling thread, if any: with unified addressing any context can answer,
// and where none is current it asks through each device's primary context
// that already exists (cuDevicePrimaryCtxGetState), never creating one.
// Leaves the calling thread's current context as it found it. Returns 0, or
// -EFAULT with a message when `ptr` is not device memory.
int FindPointerHome(const CudaApi& api, CUdeviceptr ptr, PointerHome* home,
                    std::string* message);

// What libfgds needs to know about a device.
struct DeviceInfo {
  int ordinal = -1;
  bool dmabuf_supported = false;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
  char pci_bus_id[16] = {};       // "0000:3b:00.0", lower case
};

int QueryDevice(const CudaApi& api, CUdevice device, DeviceInfo* info,
                std::string* message);

// A dma-buf covering a device range, as the importer (kernel module,
// daemon) needs it: the exported range is aligned, the caller's range
// starts `offset` bytes into it.
struct DmaBufRange {
  CUdeviceptr base = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

// AlignDmaBufRange computes the range to export for [ptr, ptr + size)
// inside the allocation [alloc_base, alloc_base + alloc_size):
// cuMemGetHandleForAddressRange wants host-page alignment, and GPU memory
// is mapped in 64 KiB pages, so the range is widened to `granule` (64 KiB)
// where the allocation allows, else to `page`. Returns 0, or -EINVAL when
// the range leaves the allocation or no page-aligned range inside the
// allocation covers it (a small allocation carved from a larger block).
// Pure: unit-tested.
int AlignDmaBufRange(CUdeviceptr ptr, uint64_t size, CUdeviceptr alloc_base,
                     uint64_t alloc_size, uint64_t page, uint64_t granule,
                     DmaBufRange* out);

// ExportDmaBuf exports [ptr, ptr + size) as a dma-buf file descriptor
// (cuMemGetHandleForAddressRange, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD).
// Returns the fd (the caller closes it) and fills *range, or -ENOTSUP (no
// dma-buf support in device or driver), -EFAULT, -EINVAL.
int ExportDmaBuf(const CudaApi& api, CUdeviceptr ptr, uint64_t size,
                 DmaBufRange* range, std::string* message);

}  // namespace fgds::cuda

#endif  // FGDS_USRBIO_CUDA_CUDA_MEMORY_H_
