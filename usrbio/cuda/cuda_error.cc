#include "usrbio/cuda/cuda_error.h"

#include <cerrno>

#include "usrbio/cuda/cuda_api.h"

namespace fgds::cuda {
namespace {

struct ErrnoOf {
  CUresult result;
  int error_number;
};

// Why each errno: ENODEV for "there is no usable GPU or driver here" (the
// caller should fall back to a CPU path), ENOTSUP for "this driver or device
// cannot do it", EFAULT for bad device addresses, EAGAIN for "not yet".
constexpr ErrnoOf kErrnoTable[] = {
    {kCudaSuccess, 0},
    {kCudaErrorInvalidValue, EINVAL},
    {kCudaErrorOutOfMemory, ENOMEM},
    {kCudaErrorNotInitialized, ENODEV},
    {kCudaErrorDeinitialized, ENODEV},
    {kCudaErrorStubLibrary, ENODEV},
    {kCudaErrorCallRequiresNewerDriver, ENOTSUP},
    {kCudaErrorDeviceUnavailable, EBUSY},
    {kCudaErrorNoDevice, ENODEV},
    {kCudaErrorInvalidDevice, ENODEV},
    {kCudaErrorInvalidContext, EINVAL},
    {kCudaErrorEccUncorrectable, EIO},
    {kCudaErrorOperatingSystem, EIO},
    {kCudaErrorInvalidHandle, EINVAL},
    {kCudaErrorNotFound, ENOENT},
    {kCudaErrorNotReady, EAGAIN},
    {kCudaErrorIllegalAddress, EFAULT},
    {kCudaErrorContextIsDestroyed, ENODEV},
    {kCudaErrorHostMemoryAlreadyRegistered, EEXIST},
    {kCudaErrorHostMemoryNotRegistered, ENOENT},
    {kCudaErrorLaunchFailed, EIO},
    {kCudaErrorNotPermitted, EPERM},
    {kCudaErrorNotSupported, ENOTSUP},
    {kCudaErrorSystemNotReady, ENODEV},
    {kCudaErrorSystemDriverMismatch, ENOTSUP},
    {kCudaErrorUnknown, EIO},
};

}  // namespace

int CuResultToErrno(CUresult result) {
  for (const ErrnoOf& entry : kErrnoTable) {
    if (entry.result == result) return entry.error_number;
  }
  return EIO;
}

std::string CuResultText(const CudaApi* api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api != nullptr && api->cuGetErrorName != nullptr &&
      api->cuGetErrorName(result, &name) != kCudaSuccess) {
    name = nullptr;
  }
  if (api != nullptr && api->cuGetErrorString != nullptr &&
      api->cuGetErrorString(result, &text) != kCudaSuccess) {
    text = nullptr;
  }
  std::string out = name != nullptr ? std::string(name)
                                    : "CUresult " + std::to_string(result);
  if (text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

int CuFailure(const CudaApi* api, CUresult result, std::string_view what,
              std::string* message) {
  if (message != nullptr) {
    *message = std::string(what) + ": " + CuResultText(api, result);
  }
  return -CuResultToErrno(result);
}

}  // namespace fgds::cuda
