#include "usrbio/direct/cuda_device_ops.h"

#include <sys/mman.h>

#include <cerrno>

#include "common/gpu/gpu_sysfs.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"
#include "usrbio/cuda/cuda_memory.h"
#include "usrbio/cuda/gpu_allowed.h"

namespace fgds::direct {
namespace {

using cuda::CUcontext;
using cuda::CudaApi;
using cuda::CUdevice;
using cuda::CUevent;
using cuda::CUresult;
using cuda::CUstream;
using cuda::kCudaSuccess;

// ScopedContext makes the driver's context current for one call made from a
// thread the driver does not own (the application's), and restores that
// thread's own context afterwards: the application's notion of "current"
// must not change under it.
class ScopedContext {
 public:
  ScopedContext(const CudaApi& api, CUcontext context) : api_(api) {
    if (api_.cuCtxGetCurrent(&previous_) != kCudaSuccess) previous_ = nullptr;
    switched_ =
        previous_ != context && api_.cuCtxSetCurrent(context) == kCudaSuccess;
  }
  ~ScopedContext() {
    if (switched_) api_.cuCtxSetCurrent(previous_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const CudaApi& api_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

int Errno(CUresult result) { return -cuda::CuResultToErrno(result); }

class CudaDeviceOps final : public DeviceOps {
 public:
  CudaDeviceOps(const CudaApi& api, CUcontext context, CUdevice device,
                bool owns_primary)
      : api_(api),
        context_(context),
        device_(device),
        owns_primary_(owns_primary) {
    cuda::DeviceInfo info;
    std::string ignored;
    if (cuda::QueryDevice(api_, device_, &info, &ignored) == 0) {
      dmabuf_supported_ = info.dmabuf_supported;
      pci_bus_id_ = info.pci_bus_id;
      numa_node_ = gpu::PciNumaNode("/sys", pci_bus_id_);
    }
  }

  ~CudaDeviceOps() override {
    if (owns_primary_) api_.cuDevicePrimaryCtxRelease(device_);
  }

  int BindThread() override { return Errno(api_.cuCtxSetCurrent(context_)); }

  int AllocPinned(size_t bytes, void** out) override {
    // Ordinary anonymous pages, registered with CUDA, rather than
    // cuMemHostAlloc: the driver maps cuMemHostAlloc memory as a PFN range
    // that get_user_pages (O_DIRECT, io_uring) cannot pin, while registered
    // anonymous memory is both DMA-able by the GPU and an O_DIRECT target
    // (kvikio's bounce buffers for Direct I/O are made the same way).
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return -errno;
    // On the GPU's NUMA node: the device's DMA reads staging across the
    // socket otherwise, and page-cache copies into it cross it too. Best
    // effort: without NUMA (or where seccomp forbids mbind, as container
    // defaults do) the pages land where the kernel puts them.
    gpu::PreferNumaNode(memory, bytes, numa_node_);
    // Huge pages mean fewer entries in the device's DMA mapping; best
    // effort, before registration faults the pages in.
    madvise(memory, bytes, MADV_HUGEPAGE);
    ScopedContext scope(api_, context_);
    // Portable: staging may be used with contexts other than ours.
    const CUresult result =
        api_.cuMemHostRegister(memory, bytes, cuda::kMemHostRegisterPortable);
    if (result != kCudaSuccess) {
      munmap(memory, bytes);
      return Errno(result);
    }
    *out = memory;
    return 0;
  }
  void FreePinned(void* ptr, size_t bytes) override {
    {
      ScopedContext scope(api_, context_);
      api_.cuMemHostUnregister(ptr);
    }
    munmap(ptr, bytes);
  }

  int CreateStream(uintptr_t* stream) override {
    ScopedContext scope(api_, context_);
    CUstream s = nullptr;
    // Non-blocking: our copies must not serialize with the application's
    // legacy default stream work.
    const CUresult result = api_.cuStreamCreate(&s, cuda::kStreamNonBlocking);
    *stream = reinterpret_cast<uintptr_t>(s);
    return Errno(result);
  }
  void DestroyStream(uintptr_t stream) override {
    ScopedContext scope(api_, context_);
    api_.cuStreamDestroy(reinterpret_cast<CUstream>(stream));
  }
  int SyncStream(uintptr_t stream) override {
    return Errno(api_.cuStreamSynchronize(reinterpret_cast<CUstream>(stream)));
  }
  int CreateEvent(uintptr_t* event) override {
    ScopedContext scope(api_, context_);
    CUevent e = nullptr;
    // Blocking sync: a worker waiting for a copy sleeps instead of spinning
    // on a core that other workers need for page-cache copies.
    const CUresult result = api_.cuEventCreate(
        &e, cuda::kEventDisableTiming | cuda::kEventBlockingSync);
    *event = reinterpret_cast<uintptr_t>(e);
    return Errno(result);
  }
  void DestroyEvent(uintptr_t event) override {
    ScopedContext scope(api_, context_);
    api_.cuEventDestroy(reinterpret_cast<CUevent>(event));
  }

  int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                   uintptr_t stream) override {
    return Errno(api_.cuMemcpyHtoDAsync(dst, src, bytes,
                                        reinterpret_cast<CUstream>(stream)));
  }
  int CopyToHost(void* dst, uint64_t src, size_t bytes,
                 uintptr_t stream) override {
    return Errno(api_.cuMemcpyDtoHAsync(dst, src, bytes,
                                        reinterpret_cast<CUstream>(stream)));
  }
  int RecordEvent(uintptr_t event, uintptr_t stream) override {
    return Errno(api_.cuEventRecord(reinterpret_cast<CUevent>(event),
                                    reinterpret_cast<CUstream>(stream)));
  }
  int QueryEvent(uintptr_t event) override {
    return Errno(api_.cuEventQuery(reinterpret_cast<CUevent>(event)));
  }
  int WaitEvent(uintptr_t event) override {
    return Errno(api_.cuEventSynchronize(reinterpret_cast<CUevent>(event)));
  }

  int Resolve(uint64_t address, AllocationInfo* info,
              std::string* message) override {
    ScopedContext scope(api_, context_);
    cuda::DevicePointerInfo pointer;
    if (int error = cuda::QueryDevicePointer(api_, address, &pointer, message);
        error != 0) {
      // Memory of another GPU may not answer every question through this
      // context (its allocation range): say which GPU it is on, so the
      // caller hears "wrong GPU" (-EXDEV), not "not device memory".
      int ordinal = -1;
      if (api_.cuPointerGetAttribute(&ordinal,
                                     cuda::kPointerAttributeDeviceOrdinal,
                                     address) == kCudaSuccess &&
          ordinal >= 0 && ordinal != device_) {
        info->device_ordinal = ordinal;
        return -EXDEV;
      }
      return error;
    }
    info->base = pointer.alloc_base;
    info->size = pointer.alloc_size;
    info->buffer_id = pointer.buffer_id;
    info->device_ordinal = pointer.device_ordinal;
    return 0;
  }
  int BufferId(uint64_t address, uint64_t* buffer_id) override {
    ScopedContext scope(api_, context_);
    return cuda::BufferIdOf(api_, address, buffer_id);
  }

  DeviceDescription Describe() override {
    DeviceDescription description;
    description.ordinal = device_;
    description.dmabuf_supported = dmabuf_supported_;
    description.pci_bus_id = pci_bus_id_;
    description.numa_node = numa_node_;
    return description;
  }

  int ExportDmaBuf(uint64_t address, uint64_t size, DmaBufExport* out,
                   std::string* message) override {
    ScopedContext scope(api_, context_);
    cuda::DmaBufRange range;
    const int fd = cuda::ExportDmaBuf(api_, address, size, &range, message);
    if (fd < 0) return fd;
    out->fd = fd;
    out->size = range.size;
    out->offset = range.offset;
    return 0;
  }

 private:
  const CudaApi& api_;
  const CUcontext context_;
  const CUdevice device_;
  const bool owns_primary_;
  // Set once by the constructor.
  bool dmabuf_supported_ = false;
  std::string pci_bus_id_;
  int numa_node_ = -1;
};

// RetainPrimary retains `device`'s primary context into *context.
int RetainPrimary(const CudaApi& api, CUdevice device, CUcontext* context,
                  std::string* message) {
  const CUresult result = api.cuDevicePrimaryCtxRetain(context, device);
  if (result != kCudaSuccess) {
    return cuda::CuFailure(
        &api, result,
        "cuDevicePrimaryCtxRetain(" + std::to_string(device) + ")", message);
  }
  return 0;
}

}  // namespace

int MakeCudaDeviceOps(bool primary_context, int device,
                      std::unique_ptr<DeviceOps>* out, std::string* message) {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) {
    *message = load.message;
    return load.error;
  }
  const CudaApi& api = *load.api;
  CUcontext context = nullptr;
  CUdevice cu_device = 0;
  if (primary_context) {
    CUresult result = api.cuDeviceGet(&cu_device, device);
    if (result != kCudaSuccess) {
      return cuda::CuFailure(
          &api, result, "cuDeviceGet(" + std::to_string(device) + ")", message);
    }
    if (int error = cuda::CheckGpuAllowed(api, cu_device, message);
        error != 0) {
      return error;
    }
    if (int error = RetainPrimary(api, cu_device, &context, message);
        error != 0) {
      return error;
    }
    *out = std::make_unique<CudaDeviceOps>(api, context, cu_device, true);
    return 0;
  }
  CUresult result = api.cuCtxGetCurrent(&context);
  if (result != kCudaSuccess) {
    return cuda::CuFailure(&api, result, "cuCtxGetCurrent", message);
  }
  if (context == nullptr) {
    *message =
        "no CUDA context is current on the calling thread: make one current "
        "(cudaSetDevice, cuCtxSetCurrent) or pass FGDS_DRIVER_PRIMARY_CTX";
    return -EINVAL;
  }
  result = api.cuCtxGetDevice(&cu_device);
  if (result != kCudaSuccess) {
    return cuda::CuFailure(&api, result, "cuCtxGetDevice", message);
  }
  if (int error = cuda::CheckGpuAllowed(api, cu_device, message); error != 0) {
    return error;
  }
  *out = std::make_unique<CudaDeviceOps>(api, context, cu_device, false);
  return 0;
}

int MakeCudaDeviceOpsForBuffer(uint64_t address, bool primary_context,
                               int device, std::unique_ptr<DeviceOps>* out,
                               std::string* message) {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) {
    *message = load.message;
    return load.error;
  }
  const CudaApi& api = *load.api;
  cuda::PointerHome home;
  if (int error = cuda::FindPointerHome(api, address, &home, message);
      error != 0) {
    return error;
  }
  CUdevice cu_device = 0;
  CUresult result = api.cuDeviceGet(&cu_device, home.device_ordinal);
  if (result != kCudaSuccess) {
    return cuda::CuFailure(
        &api, result,
        "cuDeviceGet(" + std::to_string(home.device_ordinal) + ")", message);
  }
  if (primary_context && device != home.device_ordinal) {
    *message = "the buffer lives on GPU " +
               std::to_string(home.device_ordinal) + ", not on GPU " +
               std::to_string(device) +
               " (fgds_iov_gpu_params.device): pass the buffer's device";
    return -EXDEV;
  }
  if (int error = cuda::CheckGpuAllowed(api, cu_device, message); error != 0) {
    return error;
  }
  if (!primary_context) {
    // The application's context, when it is on the buffer's device.
    CUcontext current = nullptr;
    CUdevice current_device = -1;
    if (api.cuCtxGetCurrent(&current) == kCudaSuccess && current != nullptr &&
        api.cuCtxGetDevice(&current_device) == kCudaSuccess &&
        current_device == cu_device) {
      *out = std::make_unique<CudaDeviceOps>(api, current, cu_device, false);
      return 0;
    }
  }
  CUcontext primary = nullptr;
  if (int error = RetainPrimary(api, cu_device, &primary, message);
      error != 0) {
    return error;
  }
  if (!primary_context && home.context != nullptr && home.context != primary) {
    // Allocated in a context of the application's own making: that one
    // owns the memory's mappings. It lives at least as long as the memory,
    // which outlives the iov (fgds_iov_destroy first).
    api.cuDevicePrimaryCtxRelease(cu_device);
    *out = std::make_unique<CudaDeviceOps>(api, home.context, cu_device, false);
    return 0;
  }
  *out = std::make_unique<CudaDeviceOps>(api, primary, cu_device, true);
  return 0;
}

}  // namespace fgds::direct
