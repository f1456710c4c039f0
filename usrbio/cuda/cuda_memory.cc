#include "usrbio/cuda/cuda_memory.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"

namespace fgds::cuda {
namespace {

std::string Hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

// AskHome asks the current context for the memory type, device and
// context of `ptr`. The plural call answers zeros for an address it does
// not know instead of failing; the context is asked on its own so that an
// allocation without one (cuMemCreate) cannot fail the other two.
CUresult AskHome(const CudaApi& api, CUdeviceptr ptr, unsigned* memory_type,
                 PointerHome* home) {
  *memory_type = 0;
  int ordinal = -1;
  int attributes[] = {kPointerAttributeMemoryType,
                      kPointerAttributeDeviceOrdinal};
  void* data[] = {memory_type, &ordinal};
  const CUresult result = api.cuPointerGetAttributes(2, attributes, data, ptr);
  if (result != kCudaSuccess) return result;
  home->device_ordinal = ordinal;
  CUcontext context = nullptr;
  int context_attribute = kPointerAttributeContext;
  void* context_data = &context;
  if (api.cuPointerGetAttributes(1, &context_attribute, &context_data, ptr) !=
      kCudaSuccess) {
    context = nullptr;
  }
  home->context = context;
  return kCudaSuccess;
}

bool IsDeviceMemory(unsigned memory_type) {
  return memory_type == kMemoryTypeDevice || memory_type == kMemoryTypeUnified;
}

}  // namespace

int FindPointerHome(const CudaApi& api, CUdeviceptr ptr, PointerHome* home,
                    std::string* message) {
  unsigned memory_type = 0;
  CUresult result = AskHome(api, ptr, &memory_type, home);
  if (result != kCudaSuccess || !IsDeviceMemory(memory_type)) {
    // No context current (or one that cannot see the address): ask through
    // the primary contexts that exist. The buffer was allocated in some
    // context; with the runtime API that is its device's primary one.
    CUcontext current = nullptr;
    if (api.cuCtxGetCurrent(&current) != kCudaSuccess) current = nullptr;
    int count = 0;
    if (api.cuDeviceGetCount(&count) != kCudaSuccess) count = 0;
    for (int i = 0; i < count && !IsDeviceMemory(memory_type); ++i) {
      CUdevice device = 0;
      unsigned flags = 0;
      int active = 0;
      CUcontext primary = nullptr;
      if (api.cuDeviceGet(&device, i) != kCudaSuccess ||
          api.cuDevicePrimaryCtxGetState(device, &flags, &active) !=
              kCudaSuccess ||
          active == 0 ||
          api.cuDevicePrimaryCtxRetain(&primary, device) != kCudaSuccess) {
        continue;
      }
      if (primary != current && api.cuCtxSetCurrent(primary) == kCudaSuccess) {
        result = AskHome(api, ptr, &memory_type, home);
        api.cuCtxSetCurrent(current);
      }
      api.cuDevicePrimaryCtxRelease(device);
    }
  }
  if (!IsDeviceMemory(memory_type) || home->device_ordinal < 0) {
    *message = Hex(ptr) +
               (memory_type == kMemoryTypeHost
                    ? " is host memory, not device memory"
                    : " is not CUDA device memory (never allocated, or freed)");
    return -EFAULT;
  }
  return 0;
}

int QueryDevicePointer(const CudaApi& api, CUdeviceptr ptr,
                       DevicePointerInfo* info, std::string* message) {
  // cuPointerGetAttributes answers zeros for an address CUDA does not know
  // (instead of failing), so memory type 0 means "not CUDA memory".
  unsigned memory_type = 0;
  unsigned long long buffer_id = 0;  // NOLINT: the attribute's type
  int ordinal = -1;
  // Booleans: a zeroed word, whatever width the driver writes into it.
  uint64_t managed = 0;
  int attributes[] = {kPointerAttributeMemoryType, kPointerAttributeBufferId,
                      kPointerAttributeDeviceOrdinal,
                      kPointerAttributeIsManaged};
  void* data[] = {&memory_type, &buffer_id, &ordinal, &managed};
  CUresult result = api.cuPointerGetAttributes(4, attributes, data, ptr);
  if (result != kCudaSuccess) {
    CuFailure(&api, result, "cuPointerGetAttributes(" + Hex(ptr) + ")",
              message);
    return -EFAULT;
  }
  if (memory_type != kMemoryTypeDevice && memory_type != kMemoryTypeUnified) {
    *message = Hex(ptr) +
               (memory_type == kMemoryTypeHost
                    ? " is host memory, not device memory"
                    : " is not CUDA device memory (never allocated, or freed)");
    return -EFAULT;
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  result = api.cuMemGetAddressRange(&base, &size, ptr);
  if (result != kCudaSuccess) {
    CuFailure(&api, result, "cuMemGetAddressRange(" + Hex(ptr) + ")", message);
    return -EFAULT;
  }
  info->alloc_base = base;
  info->alloc_size = size;
  info->buffer_id = buffer_id;
  info->device_ordinal = ordinal;
  info->is_managed = managed != 0;
  return 0;
}

int BufferIdOf(const CudaApi& api, CUdeviceptr ptr, uint64_t* buffer_id) {
  unsigned long long id = 0;  // NOLINT: the attribute's type
  if (api.cuPointerGetAttribute(&id, kPointerAttributeBufferId, ptr) !=
      kCudaSuccess) {
    return -EFAULT;
  }
  *buffer_id = id;
  return 0;
}

int QueryDevice(const CudaApi& api, CUdevice device, DeviceInfo* info,
                std::string* message) {
  info->ordinal = device;
  int dmabuf = 0;
  CUresult result = api.cuDeviceGetAttribute(
      &dmabuf, kDeviceAttributeDmaBufSupported, device);
  // Drivers older than the attribute answer INVALID_VALUE: no dma-buf.
  info->dmabuf_supported = result == kCudaSuccess && dmabuf != 0;
  char bus_id[sizeof(info->pci_bus_id)] = {};
  result = api.cuDeviceGetPCIBusId(bus_id, sizeof(bus_id), device);
  if (result != kCudaSuccess) {
    return CuFailure(&api, result, "cuDeviceGetPCIBusId", message);
  }
  for (size_t i = 0; i < sizeof(bus_id); ++i) {
    info->pci_bus_id[i] =
        static_cast<char>(std::tolower(static_cast<unsigned char>(bus_id[i])));
  }
  info->pci_bus_id[sizeof(info->pci_bus_id) - 1] = '\0';
  return 0;
}

int AlignDmaBufRange(CUdeviceptr ptr, uint64_t size, CUdeviceptr alloc_base,
                     uint64_t alloc_size, uint64_t page, uint64_t granule,
                     DmaBufRange* out) {
  if (size == 0 || ptr < alloc_base || ptr - alloc_base > alloc_size ||
      size > alloc_size - (ptr - alloc_base)) {
    return -EINVAL;
  }
  const uint64_t alloc_end = alloc_base + alloc_size;
  const uint64_t end = ptr + size;
  // Try the GPU page first (the importer maps whole 64 KiB pages), then the
  // host page cuMemGetHandleForAddressRange insists on.
  for (uint64_t align : {granule, page}) {
    if (align == 0 || (align & (align - 1)) != 0) continue;
    const uint64_t base = ptr & ~(align - 1);
    const uint64_t limit = (end + align - 1) & ~(align - 1);
    if (base >= alloc_base && limit <= alloc_end && limit > base) {
      out->base = base;
      out->size = limit - base;
      out->offset = ptr - base;
      return 0;
    }
  }
  return -EINVAL;
}

int ExportDmaBuf(const CudaApi& api, CUdeviceptr ptr, uint64_t size,
                 DmaBufRange* range, std::string* message) {
  if (api.cuMemGetHandleForAddressRange == nullptr) {
    *message =
        "the NVIDIA driver has no cuMemGetHandleForAddressRange (CUDA 11.7+ "
        "needed for dma-buf export)";
    return -ENOTSUP;
  }
  DevicePointerInfo info;
  if (int error = QueryDevicePointer(api, ptr, &info, message); error != 0) {
    return error;
  }
  const long host_page = sysconf(_SC_PAGESIZE);
  if (AlignDmaBufRange(ptr, size, info.alloc_base, info.alloc_size,
                       static_cast<uint64_t>(host_page), uint64_t{64} << 10,
                       range) != 0) {
    *message = "cannot export " + Hex(ptr) + "+" + std::to_string(size) +
               " as a dma-buf: no page-aligned range of its allocation " +
               Hex(info.alloc_base) + "+" + std::to_string(info.alloc_size) +
               " covers it";
    return -EINVAL;
  }
  int fd = -1;
  const CUresult result = api.cuMemGetHandleForAddressRange(
      &fd, range->base, range->size, kMemRangeHandleTypeDmaBufFd, 0);
  if (result != kCudaSuccess) {
    return CuFailure(&api, result, "cuMemGetHandleForAddressRange(dma-buf)",
                     message);
  }
  return fd;
}

}  // namespace fgds::cuda
