// File: usrbio/cuda/cuda_api.h
//
// The one module that dlopen()s libcuda.so.1 (STYLE.md 13). Everything else
// reaches the CUDA driver API through a CudaApi: a table of function
// pointers, so that libfgds builds and runs on hosts without CUDA (GPU calls
// then fail with -ENODEV and say why) and so that tests can hand the code a
// table of their own (fault injection).
//
// Nothing here creates a CUDA context: callers use the context current on
// their thread, or retain a device's primary context when their caller asks
// for it (cuDevicePrimaryCtxRetain).
//
// Example:
//   const fgds::cuda::CudaLoad& cuda = fgds::cuda::Cuda();
//   if (cuda.api == nullptr) return cuda.error;  // -ENODEV, cuda.message
//   cuda.api->cuMemcpyHtoDAsync(dst, src, n, stream);
#ifndef FGDS_USRBIO_CUDA_CUDA_API_H_
#define FGDS_USRBIO_CUDA_CUDA_API_H_

#include <memory>
#include <string>

#include "usrbio/cuda/cuda_types.h"

namespace fgds::cuda {

// The driver API entry points libfgds uses, named as in cuda.h (the loader
// resolves the current ABI version of each: cuMemAlloc is cuMemAlloc_v2).
// Every member is non-null in a table that Cuda() or LoadCudaLibrary()
// returns, except the ones marked optional.
struct CudaApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);

  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetPCIBusId)(char* bus_id, int len, CUdevice device);

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  // Whether a device's primary context exists (`active`): finds the
  // context of a buffer without creating one (cuda_memory.h, PointerHome).
  CUresult (*cuDevicePrimaryCtxGetState)(CUdevice device, unsigned* flags,
                                         int* active);
  CUresult (*cuCtxGetCurrent)(CUcontext* context);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxGetDevice)(CUdevice* device);
  // The bare name's ABI (no argument): waits for the current context.
  CUresult (*cuCtxSynchronize)();

  CUresult (*cuPointerGetAttribute)(void* data, int attribute, CUdeviceptr ptr);
  CUresult (*cuPointerGetAttributes)(unsigned count, int* attributes,
                                     void** data, CUdeviceptr ptr);
  CUresult (*cuMemGetAddressRange)(CUdeviceptr* base, size_t* size,
                                   CUdeviceptr ptr);
  // Optional (CUDA 11.7+): null when the driver lacks it; dma-buf export is
  // then unsupported.
  CUresult (*cuMemGetHandleForAddressRange)(void* handle, CUdeviceptr ptr,
                                            size_t size, int handle_type,
                                            unsigned long long flags);

  CUresult (*cuMemHostAlloc)(void** ptr, size_t size, unsigned flags);
  CUresult (*cuMemFreeHost)(void* ptr);
  CUresult (*cuMemHostRegister)(void* ptr, size_t size, unsigned flags);
  CUresult (*cuMemHostUnregister)(void* ptr);
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t size);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemsetD8)(CUdeviceptr ptr, unsigned char value, size_t count);

  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t size);
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t size);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t size,
                                CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t size,
                                CUstream stream);

  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);

  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The outcome of loading the driver API.
struct CudaLoad {
  const CudaApi* api = nullptr;  // null when the driver is unusable
  int error = 0;                 // -ENODEV or -ENOTSUP when api is null
  std::string message;           // why, when api is null
};

// Cuda returns the process-wide driver API: on first use it dlopen()s
// "libcuda.so.1", resolves every entry point and calls cuInit(0). The
// outcome (success or failure) is computed once and never changes; the
// library is never unloaded. Thread-safe.
const CudaLoad& Cuda();

// CudaLibrary is a privately loaded copy of a driver library (tests load the
// CUDA stub library, or a missing one, through it). Unloaded on destruction.
class CudaLibrary {
 public:
  ~CudaLibrary();
  CudaLibrary(const CudaLibrary&) = delete;
  CudaLibrary& operator=(const CudaLibrary&) = delete;

  const CudaApi& api() const { return api_; }

  // Load dlopen()s `path` (a file name searched like dlopen's, or a path),
  // resolves the entry points and, when `init` is set, calls cuInit(0).
  // Returns null and sets *error (-ENODEV: missing library or no usable
  // device; -ENOTSUP: driver too old) and *message on failure.
  static std::unique_ptr<CudaLibrary> Load(const char* path, bool init,
                                           int* error, std::string* message);

 private:
  CudaLibrary() = default;
  void* handle_ = nullptr;
  CudaApi api_{};
};

}  // namespace fgds::cuda

#endif  // FGDS_USRBIO_CUDA_CUDA_API_H_
