#include "usrbio/cuda/cuda_error.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "usrbio/cuda/cuda_api.h"

namespace fgds::cuda {
namespace {

struct Case {
  CUresult result;
  int error_number;
};

// The errno a C API caller sees for each CUDA failure it can act on.
constexpr Case kCases[] = {
    {kCudaSuccess, 0},
    {kCudaErrorInvalidValue, EINVAL},
    {kCudaErrorOutOfMemory, ENOMEM},
    {kCudaErrorNotInitialized, ENODEV},
    {kCudaErrorStubLibrary, ENODEV},
    {kCudaErrorNoDevice, ENODEV},
    {kCudaErrorInvalidDevice, ENODEV},
    {kCudaErrorCallRequiresNewerDriver, ENOTSUP},
    {kCudaErrorNotSupported, ENOTSUP},
    {kCudaErrorIllegalAddress, EFAULT},
    {kCudaErrorNotReady, EAGAIN},
    {kCudaErrorNotPermitted, EPERM},
    {kCudaErrorHostMemoryAlreadyRegistered, EEXIST},
    {kCudaErrorUnknown, EIO},
    {12345, EIO},  // unknown codes: a generic I/O error, never 0
};

TEST(CudaErrorTest, MapsEveryCase) {
  for (const Case& c : kCases) {
    EXPECT_EQ(CuResultToErrno(c.result), c.error_number)
        << "CUresult " << c.result;
  }
}

TEST(CudaErrorTest, TextWithoutDriverNamesTheNumber) {
  EXPECT_EQ(CuResultText(nullptr, 100), "CUresult 100");
}

// A driver table whose error strings come from the test: the message must
// use the driver's name and text.
CUresult FakeName(CUresult, const char** name) {
  *name = "CUDA_ERROR_NO_DEVICE";
  return kCudaSuccess;
}
CUresult FakeString(CUresult, const char** text) {
  *text = "no CUDA-capable device is detected";
  return kCudaSuccess;
}

TEST(CudaErrorTest, FailureMessageUsesDriverStrings) {
  CudaApi api{};
  api.cuGetErrorName = FakeName;
  api.cuGetErrorString = FakeString;
  std::string message;
  EXPECT_EQ(CuFailure(&api, kCudaErrorNoDevice, "cuInit", &message), -ENODEV);
  EXPECT_EQ(message,
            "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
            "detected)");
}

}  // namespace
}  // namespace fgds::cuda
