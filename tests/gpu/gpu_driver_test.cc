// The driver object on a real GPU: which path and why, contexts (never one
// of its own), errno left alone, and the dma-buf export the direct path and
// the daemon's GPU iovs build on.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <thread>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"
#include "usrbio/cuda/cuda_memory.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

class GpuDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { FGDS_REQUIRE_GPU(); }
  ScratchDir dir_;
};

TEST_F(GpuDriverTest, QuerySaysBounceAndWhyNotDirect) {
  ScopedDriver driver;
  fgds_driver_info info;
  ASSERT_EQ(fgds_driver_query(driver.get(), &info), 0);
  EXPECT_EQ(info.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_EQ(info.device, 0);
  EXPECT_GT(std::strlen(info.pci_bus_id), 0u);
  EXPECT_GT(info.workers, 0u);
  EXPECT_GE(info.staging_bytes, 2 * info.chunk_bytes);
  const std::string why = info.direct_unavailable;
  EXPECT_TRUE(why.find("/dev/fgds_") != std::string::npos ||
              why.find("DMA_BUF_SUPPORTED") != std::string::npos)
      << why;
  RecordProperty("pci_bus_id", info.pci_bus_id);
  RecordProperty("dmabuf_supported", static_cast<int>(info.dmabuf_supported));
  RecordProperty("direct_unavailable", why);
  std::printf(
      "fgds driver: device %d (%s), dma-buf %s, %u workers, %llu MiB "
      "staging\n  direct path unavailable: %s\n",
      info.device, info.pci_bus_id, info.dmabuf_supported ? "yes" : "no",
      info.workers, static_cast<unsigned long long>(info.staging_bytes >> 20),
      why.c_str());
}

TEST_F(GpuDriverTest, NeedsAContextOrThePrimaryFlag) {
  const std::string path = dir_.WriteFile("data", RandomBytes(kMiB, 9));
  DeviceBuffer buffer(kMiB);  // in device 0's primary context
  std::thread bare([&] {
    // This thread has no current context.
    fgds_driver* driver = nullptr;
    EXPECT_EQ(fgds_driver_open(&driver, nullptr), -EINVAL);
    EXPECT_NE(std::string(fgds_last_error()).find("no CUDA context"),
              std::string::npos)
        << fgds_last_error();
    fgds_driver_params params{};
    params.flags = FGDS_DRIVER_PRIMARY_CTX;
    params.device = 0;
    ASSERT_EQ(fgds_driver_open(&driver, &params), 0) << fgds_last_error();
    const int fd = open(path.c_str(), O_RDONLY);
    EXPECT_EQ(fgds_pread(driver, fd, buffer.ptr(), kMiB, 0, 0),
              static_cast<ssize_t>(kMiB))
        << fgds_last_error();
    close(fd);
    // Still no current context here: the driver restored the thread's.
    cuda::CUcontext current = nullptr;
    EXPECT_EQ(GpuEnv::Get().api().cuCtxGetCurrent(&current), 0);
    EXPECT_EQ(current, nullptr);
    EXPECT_EQ(fgds_driver_close(driver), 0);
  });
  bare.join();
}

TEST_F(GpuDriverTest, ErrnoIsNeverChanged) {
  ScopedDriver driver;
  const std::string path = dir_.WriteFile("data", RandomBytes(kMiB, 10));
  const int fd = open(path.c_str(), O_RDONLY);
  DeviceBuffer buffer(kMiB);
  errno = 4242;
  EXPECT_EQ(fgds_pread(driver.get(), fd, buffer.ptr(), kMiB, 1, 0),
            static_cast<ssize_t>(kMiB - 1));
  EXPECT_EQ(fgds_pread(driver.get(), -1, buffer.ptr(), kMiB, 0, 0), -EBADF);
  EXPECT_EQ(errno, 4242);
  close(fd);
}

// The handoff the direct path and the daemon's GPU iovs need: a dma-buf fd
// for a sub-range of an allocation, aligned for the importer.
TEST_F(GpuDriverTest, ExportsDmaBufForSubRange) {
  ScopedDriver driver;
  fgds_driver_info info;
  ASSERT_EQ(fgds_driver_query(driver.get(), &info), 0);
  DeviceBuffer buffer(8 * kMiB);
  cuda::DmaBufRange range;
  std::string message;
  const int fd =
      cuda::ExportDmaBuf(GpuEnv::Get().api(), buffer.address() + kMiB + 100,
                         kMiB, &range, &message);
  if (!info.dmabuf_supported) {
    EXPECT_LT(fd, 0);
    GTEST_SKIP() << "no dma-buf support: " << message;
  }
  ASSERT_GE(fd, 0) << message;
  EXPECT_EQ(range.base % (64 * 1024), 0u);
  EXPECT_EQ(range.base + range.offset, buffer.address() + kMiB + 100);
  EXPECT_GE(range.size, range.offset + kMiB);
  char link[PATH_MAX] = {};
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ASSERT_GT(readlink(proc.c_str(), link, sizeof(link) - 1), 0);
  EXPECT_NE(std::string(link).find("dmabuf"), std::string::npos) << link;
  std::printf("dma-buf fd %d -> %s, range 0x%llx+%llu offset %llu\n", fd, link,
              static_cast<unsigned long long>(range.base),
              static_cast<unsigned long long>(range.size),
              static_cast<unsigned long long>(range.offset));
  close(fd);
}

}  // namespace
}  // namespace fgds::testing
