#include "usrbio/cuda/cuda_api.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace fgds::cuda {
namespace {

TEST(CudaApiTest, MissingLibraryIsNoDevice) {
  int error = 0;
  std::string message;
  auto library = CudaLibrary::Load("libfgds-no-such-driver.so.1",
                                   /*init=*/true, &error, &message);
  EXPECT_EQ(library, nullptr);
  EXPECT_EQ(error, -ENODEV);
  EXPECT_NE(message.find("libfgds-no-such-driver.so.1"), std::string::npos)
      << message;
  EXPECT_NE(message.find("no NVIDIA driver"), std::string::npos) << message;
}

TEST(CudaApiTest, ProcessWideLoadIsStableAndExplainsFailure) {
  const CudaLoad& first = Cuda();
  const CudaLoad& second = Cuda();
  EXPECT_EQ(&first, &second);
  if (first.api != nullptr) {
    EXPECT_EQ(first.error, 0);
    EXPECT_GT(first.api->driver_version, 0);
    return;
  }
  EXPECT_TRUE(first.error == -ENODEV || first.error == -ENOTSUP) << first.error;
  EXPECT_FALSE(first.message.empty());
}

#ifdef FGDS_CUDA_STUB_LIBRARY
// The toolkit's stub resolves every symbol but cuInit fails: the loader must
// tell a stub from a driver (CI hosts have the toolkit, not the driver).
TEST(CudaApiTest, StubLibraryIsNoDevice) {
  int error = 0;
  std::string message;
  auto resolved = CudaLibrary::Load(FGDS_CUDA_STUB_LIBRARY, /*init=*/false,
                                    &error, &message);
  ASSERT_NE(resolved, nullptr) << message;
  EXPECT_NE(resolved->api().cuMemcpyHtoDAsync, nullptr);
  EXPECT_NE(resolved->api().cuMemGetHandleForAddressRange, nullptr);

  auto initialized = CudaLibrary::Load(FGDS_CUDA_STUB_LIBRARY, /*init=*/true,
                                       &error, &message);
  EXPECT_EQ(initialized, nullptr);
  EXPECT_EQ(error, -ENODEV);
  EXPECT_NE(message.find("stub"), std::string::npos) << message;
}
#endif

}  // namespace
}  // namespace fgds::cuda
