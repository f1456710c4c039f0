// GpuBackend on the CUDA driver API, reached only through fgds_cuda's
// dlopen'ed loader (usrbio/cuda/cuda_api.h): the drop-in links no CUDA
// library, so it loads on hosts without a GPU and answers cuFile's errors
// there.
#include <cerrno>
#include <string>

#include "dropin/cufile/gpu_backend.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"
#include "usrbio/cuda/cuda_memory.h"

namespace fgds::cufile {
namespace {

class CudaBackend final : public GpuBackend {
 public:
  int Probe(int* cu_result, std::string* message) override {
    const cuda::CudaLoad& load = cuda::Cuda();
    if (load.api == nullptr) {
      *cu_result = load.error == -ENOTSUP
                       ? cuda::kCudaErrorCallRequiresNewerDriver
                       : cuda::kCudaErrorNoDevice;
      *message = load.message;
      return load.error;
    }
    int count = 0;
    const cuda::CUresult result = load.api->cuDeviceGetCount(&count);
    if (result != cuda::kCudaSuccess || count <= 0) {
      *cu_result =
          result != cuda::kCudaSuccess ? result : cuda::kCudaErrorNoDevice;
      *message = "no CUDA device";
      return -ENODEV;
    }
    return 0;
  }

  int DeviceOf(uint64_t address, int* device) override {
    const cuda::CudaLoad& load = cuda::Cuda();
    if (load.api == nullptr) return -EFAULT;
    cuda::DevicePointerInfo info;
    std::string message;
    if (int error =
            cuda::QueryDevicePointer(*load.api, address, &info, &message);
        error != 0) {
      return error;
    }
    *device = info.device_ordinal;
    return 0;
  }

  int OpenDriver(int device, fgds_driver** driver,
                 std::string* message) override {
    fgds_driver_params params = {};
    params.flags = FGDS_DRIVER_PRIMARY_CTX;
    params.device = device;
    const int error = fgds_driver_open(driver, &params);
    if (error != 0) *message = fgds_last_error();
    return error;
  }

  int SynchronizeStream(void* stream, int* cu_result) override {
    const cuda::CudaLoad& load = cuda::Cuda();
    if (load.api == nullptr) {
      *cu_result = cuda::kCudaErrorNoDevice;
      return load.error;
    }
    const cuda::CUresult result =
        load.api->cuStreamSynchronize(static_cast<cuda::CUstream>(stream));
    if (result != cuda::kCudaSuccess) {
      *cu_result = result;
      return -cuda::CuResultToErrno(result);
    }
    return 0;
  }
};

}  // namespace

GpuBackend& Backend() {
  static CudaBackend* backend = new CudaBackend();  // never destroyed
  return *backend;
}

}  // namespace fgds::cufile
