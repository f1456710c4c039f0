#include "usrbio/cuda/cuda_api.h"

#include <dlfcn.h>

#include <cerrno>
#include <mutex>

#include "usrbio/cuda/cuda_error.h"

namespace fgds::cuda {
namespace {

// One row per entry point: the member and the exported symbol. The symbol
// is the ABI version cuda.h maps the name to (cuMemAlloc -> cuMemAlloc_v2);
// the default-stream variants (_ptds/_ptsz) are never used because every
// asynchronous call names its stream.
#define FGDS_CUDA_REQUIRED_SYMBOLS(X)                          \
  X(cuInit, "cuInit")                                          \
  X(cuDriverGetVersion, "cuDriverGetVersion")                  \
  X(cuGetErrorName, "cuGetErrorName")                          \
  X(cuGetErrorString, "cuGetErrorString")                      \
  X(cuDeviceGetCount, "cuDeviceGetCount")                      \
  X(cuDeviceGet, "cuDeviceGet")                                \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")              \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId")                \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
  X(cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState")  \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                        \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                        \
  X(cuCtxGetDevice, "cuCtxGetDevice")                          \
  X(cuCtxSynchronize, "cuCtxSynchronize")                      \
  X(cuPointerGetAttribute, "cuPointerGetAttribute")            \
  X(cuPointerGetAttributes, "cuPointerGetAttributes")          \
  X(cuMemGetAddressRange, "cuMemGetAddressRange_v2")           \
  X(cuMemHostAlloc, "cuMemHostAlloc")                          \
  X(cuMemFreeHost, "cuMemFreeHost")                            \
  X(cuMemHostRegister, "cuMemHostRegister_v2")                 \
  X(cuMemHostUnregister, "cuMemHostUnregister")                \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemsetD8, "cuMemsetD8_v2")                               \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                 \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                 \
  X(cuStreamCreate, "cuStreamCreate")                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                     \
  X(cuStreamSynchronize, "cuStreamSynchronize")                \
  X(cuEventCreate, "cuEventCreate")                            \
  X(cuEventDestroy, "cuEventDestroy_v2")                       \
  X(cuEventRecord, "cuEventRecord")                            \
  X(cuEventQuery, "cuEventQuery")                              \
  X(cuEventSynchronize, "cuEventSynchronize")

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out) {
  void* address = dlsym(handle, symbol);
  *out = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

// ResolveAll fills `api` from `handle`. Returns 0, or -ENOTSUP naming the
// first missing required symbol (a driver older than this code needs).
int ResolveAll(void* handle, const char* path, CudaApi* api,
               std::string* message) {
#define FGDS_CUDA_RESOLVE(member, symbol)                                     \
  if (!Resolve(handle, symbol, &api->member)) {                               \
    *message = std::string(path) + " has no " + symbol +                      \
               ": the NVIDIA driver is too old for libfgds (needs CUDA 11.7 " \
               "or newer)";                                                   \
    return -ENOTSUP;                                                          \
  }
  FGDS_CUDA_REQUIRED_SYMBOLS(FGDS_CUDA_RESOLVE)
#undef FGDS_CUDA_RESOLVE
  // Optional: only dma-buf export (the direct path) needs it.
  Resolve(handle, "cuMemGetHandleForAddressRange",
          &api->cuMemGetHandleForAddressRange);
  return 0;
}

// Initialize calls cuInit(0) and reads the driver version.
int Initialize(const char* path, CudaApi* api, std::string* message) {
  const CUresult result = api->cuInit(0);
  if (result == kCudaErrorStubLibrary) {
    *message = std::string(path) +
               " is CUDA's stub library, not an NVIDIA driver: no GPU "
               "available";
    return -ENODEV;
  }
  if (result != kCudaSuccess) {
    std::string detail;
    const int error = CuFailure(api, result, "cuInit", &detail);
    *message = detail + ": no usable GPU";
    return error == -ENOTSUP ? -ENOTSUP : -ENODEV;
  }
  if (api->cuDriverGetVersion(&api->driver_version) != kCudaSuccess) {
    api->driver_version = 0;
  }
  return 0;
}

}  // namespace

CudaLibrary::~CudaLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::unique_ptr<CudaLibrary> CudaLibrary::Load(const char* path, bool init,
                                               int* error,
                                               std::string* message) {
  // RTLD_LOCAL: the driver's symbols must not interpose on an application
  // that links a CUDA runtime of its own.
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = -ENODEV;
    *message = std::string("cannot load ") + path + " (" +
               (why != nullptr ? why : "unknown dlopen error") +
               "): no NVIDIA driver on this host, so no GPU I/O";
    return nullptr;
  }
  std::unique_ptr<CudaLibrary> library(new CudaLibrary());
  library->handle_ = handle;
  *error = ResolveAll(handle, path, &library->api_, message);
  if (*error == 0 && init) *error = Initialize(path, &library->api_, message);
  if (*error != 0) return nullptr;
  return library;
}

const CudaLoad& Cuda() {
  static CudaLoad* load = [] {
    auto* result = new CudaLoad();
    // Leaked on purpose: unloading libcuda while its threads run is unsafe,
    // and other code in the process may hold pointers into it.
    std::unique_ptr<CudaLibrary> library = CudaLibrary::Load(
        "libcuda.so.1", /*init=*/true, &result->error, &result->message);
    if (library != nullptr) result->api = &library.release()->api();
    return result;
  }();
  return *load;
}

}  // namespace fgds::cuda
