// FindPointerHome against a driver table of our own (no GPU needed): the
// answer through the current context, and through the primary contexts
// that exist when no context is current, restoring the thread's context
// and giving back every retain.
#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_memory.h"

namespace fgds::cuda {
namespace {

// A two-GPU driver: device 1's primary context exists (device 0's does
// not), a buffer at kBuffer lives on device 1 in that context, and pointer
// queries fail without a current context, as a driver may.
constexpr CUdeviceptr kBuffer = 0x7f0000100000;
CUctx_st* const kPrimary1 = reinterpret_cast<CUctx_st*>(0x1111);
CUctx_st* const kOther = reinterpret_cast<CUctx_st*>(0x2222);

struct Driver {
  CUcontext current = nullptr;
  int retained = 0;  // retains not yet released
  int set_current_calls = 0;
} driver;

CUresult GetCurrent(CUcontext* c) {
  *c = driver.current;
  return kCudaSuccess;
}
CUresult SetCurrent(CUcontext c) {
  ++driver.set_current_calls;
  driver.current = c;
  return kCudaSuccess;
}
CUresult Count(int* n) {
  *n = 2;
  return kCudaSuccess;
}
CUresult Get(CUdevice* d, int ordinal) {
  *d = ordinal;
  return kCudaSuccess;
}
CUresult State(CUdevice d, unsigned* flags, int* active) {
  *flags = 0;
  *active = d == 1 ? 1 : 0;
  return kCudaSuccess;
}
CUresult Retain(CUcontext* c, CUdevice d) {
  if (d != 1) return kCudaErrorInvalidDevice;  // would create one
  ++driver.retained;
  *c = kPrimary1;
  return kCudaSuccess;
}
CUresult Release(CUdevice) {
  --driver.retained;
  return kCudaSuccess;
}
CUresult Attributes(unsigned n, int* attributes, void** data, CUdeviceptr p) {
  if (driver.current == nullptr) return kCudaErrorInvalidContext;
  const bool known = p >= kBuffer && p < kBuffer + (1 << 20);
  for (unsigned i = 0; i < n; ++i) {
    switch (attributes[i]) {
      case kPointerAttributeMemoryType:
        *static_cast<unsigned*>(data[i]) = known ? kMemoryTypeDevice : 0;
        break;
      case kPointerAttributeDeviceOrdinal:
        *static_cast<int*>(data[i]) = known ? 1 : -1;
        break;
      case kPointerAttributeContext:
        *static_cast<CUcontext*>(data[i]) = known ? kPrimary1 : nullptr;
        break;
      default:
        return kCudaErrorInvalidValue;
    }
  }
  return kCudaSuccess;
}

CudaApi FakeApi() {
  CudaApi api{};
  api.cuCtxGetCurrent = GetCurrent;
  api.cuCtxSetCurrent = SetCurrent;
  api.cuDeviceGetCount = Count;
  api.cuDeviceGet = Get;
  api.cuDevicePrimaryCtxGetState = State;
  api.cuDevicePrimaryCtxRetain = Retain;
  api.cuDevicePrimaryCtxRelease = Release;
  api.cuPointerGetAttributes = Attributes;
  return api;
}

TEST(PointerHomeTest, AnsweredThroughTheCurrentContext) {
  const CudaApi api = FakeApi();
  driver = {};
  driver.current = kOther;  // another device's context: UVA answers anyway
  PointerHome home;
  std::string why;
  ASSERT_EQ(FindPointerHome(api, kBuffer + 4096, &home, &why), 0) << why;
  EXPECT_EQ(home.device_ordinal, 1);
  EXPECT_EQ(home.context, kPrimary1);
  EXPECT_EQ(driver.current, kOther);
  EXPECT_EQ(driver.set_current_calls, 0);
  EXPECT_EQ(driver.retained, 0);
}

TEST(PointerHomeTest, WithoutAContextAskedThroughExistingPrimaryContexts) {
  const CudaApi api = FakeApi();
  driver = {};
  PointerHome home;
  std::string why;
  ASSERT_EQ(FindPointerHome(api, kBuffer, &home, &why), 0) << why;
  EXPECT_EQ(home.device_ordinal, 1);
  EXPECT_EQ(home.context, kPrimary1);
  EXPECT_EQ(driver.current, nullptr) << "the thread's (lack of) context stays";
  EXPECT_EQ(driver.retained, 0) << "every retain given back";
}

TEST(PointerHomeTest, NotDeviceMemoryIsEfault) {
  const CudaApi api = FakeApi();
  driver = {};
  PointerHome home;
  std::string why;
  EXPECT_EQ(FindPointerHome(api, 0x1000, &home, &why), -EFAULT);
  EXPECT_NE(why.find("not CUDA device memory"), std::string::npos) << why;
  EXPECT_EQ(driver.current, nullptr);
  EXPECT_EQ(driver.retained, 0);
  driver.current = kOther;
  EXPECT_EQ(FindPointerHome(api, 0x1000, &home, &why), -EFAULT);
  EXPECT_EQ(driver.current, kOther);
}

}  // namespace
}  // namespace fgds::cuda
