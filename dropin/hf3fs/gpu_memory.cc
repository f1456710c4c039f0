#include "dropin/hf3fs/gpu_memory.h"

#include <cerrno>

#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"

namespace fgds::hf3fs {
namespace {

using cuda::CudaApi;

// Runs `body` with device `device`'s primary context current, restoring
// the thread's own context afterwards (the library never changes which
// context is current on an application's thread).
template <typename Body>
int InPrimaryContext(const CudaApi& api, int device, bool retain, Body body) {
  cuda::CUdevice handle = 0;
  if (api.cuDeviceGet(&handle, device) != cuda::kCudaSuccess) return -EINVAL;
  cuda::CUcontext context = nullptr;
  if (api.cuDevicePrimaryCtxRetain(&context, handle) != cuda::kCudaSuccess) {
    return -ENOTSUP;
  }
  cuda::CUcontext previous = nullptr;
  api.cuCtxGetCurrent(&previous);
  api.cuCtxSetCurrent(context);
  const int result = body();
  api.cuCtxSetCurrent(previous);
  // An allocation keeps its retain (released by FreeDeviceMemory); a
  // failed one, and the free itself, give theirs back.
  if (!retain || result != 0) api.cuDevicePrimaryCtxRelease(handle);
  return result;
}

}  // namespace

int DeviceCount() {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) return 0;
  int count = 0;
  if (load.api->cuDeviceGetCount(&count) != cuda::kCudaSuccess) return 0;
  return count;
}

int AllocDeviceMemory(int device, size_t size, uint64_t* address) {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr || DeviceCount() == 0) return -ENOTSUP;
  if (device < 0 || device >= DeviceCount()) return -EINVAL;
  const CudaApi& api = *load.api;
  return InPrimaryContext(api, device, /*retain=*/true, [&] {
    cuda::CUdeviceptr ptr = 0;
    if (api.cuMemAlloc(&ptr, size) != cuda::kCudaSuccess) return -ENOMEM;
    *address = ptr;
    return 0;
  });
}

void FreeDeviceMemory(int device, uint64_t address) {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) return;
  const CudaApi& api = *load.api;
  InPrimaryContext(api, device, /*retain=*/false, [&] {
    api.cuMemFree(address);
    return 0;
  });
  // The allocation's own retain.
  cuda::CUdevice handle = 0;
  if (api.cuDeviceGet(&handle, device) == cuda::kCudaSuccess) {
    api.cuDevicePrimaryCtxRelease(handle);
  }
}

int WrapDeviceMemory(fgds_session* session, fgds_iov* iov, uint64_t address,
                     uint64_t size, int device) {
  fgds_iov_gpu_params params = {};
  params.flags = FGDS_IOV_GPU_PRIMARY_CTX;
  params.device = device;
  return fgds_iov_wrap_gpu(session, iov, address, size, &params);
}

int SynchronizeDevice(int device) {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) return -ENODEV;
  if (device < 0 || device >= DeviceCount()) return -EINVAL;
  const CudaApi& api = *load.api;
  return InPrimaryContext(api, device, /*retain=*/false, [&] {
    const cuda::CUresult result = api.cuCtxSynchronize();
    return result == cuda::kCudaSuccess ? 0 : -cuda::CuResultToErrno(result);
  });
}

}  // namespace fgds::hf3fs
