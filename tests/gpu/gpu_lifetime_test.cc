// Buffer and driver lifetimes under I/O: deregistration fences, freeing a
// buffer while its I/O runs (no crash, no write into memory that is no
// longer the buffer), and the refusals that keep the caller honest.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kFileSize = 256 * kMiB;

class GpuLifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FGDS_REQUIRE_GPU();
    path_ = dir_.WriteFile("data", RandomBytes(kFileSize, 6));
    fd_ = open(path_.c_str(), O_RDONLY);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
  }
  fgds_io ReadIo(void* devptr, uint64_t size) const {
    fgds_io io{};
    io.opcode = FGDS_OP_READ;
    io.fd = fd_;
    io.devptr = devptr;
    io.size = size;
    return io;
  }

  ScratchDir dir_;
  std::string path_;
  int fd_ = -1;
};

TEST_F(GpuLifetimeTest, DeregisterWaitsForIoInFlight) {
  ScopedDriver driver;
  DeviceBuffer buffer(kFileSize);
  ASSERT_EQ(fgds_buf_register(driver.get(), buffer.ptr(), kFileSize, 0), 0);
  DropFileCache(path_);
  fgds_io io = ReadIo(buffer.ptr(), kFileSize);
  ASSERT_EQ(fgds_io_submit(driver.get(), &io, 1), 1);
  ASSERT_EQ(fgds_buf_deregister(driver.get(), buffer.ptr()), 0);
  // Deregistration returned, so the I/O is over: freeing is safe now.
  EXPECT_EQ(fgds_io_wait(driver.get(), &io, 0), 0);
  EXPECT_EQ(io.result, static_cast<int64_t>(kFileSize));
}

// Run in a child process (death-test style) so that a CUDA context broken
// by a bad copy cannot take the other tests with it. The child frees the
// target of a large read while it runs, allocates memory that may land at
// the same address, and checks that neither that memory nor a canary was
// written, and that the driver still works.
void FreeWhileReading(int fd, const std::string& path) {
  GpuEnv::Get().MakeCurrent();
  const cuda::CudaApi& api = GpuEnv::Get().api();
  fgds_driver* driver = nullptr;
  if (fgds_driver_open(&driver, nullptr) != 0) {
    std::fprintf(stderr, "open: %s\n", fgds_last_error());
    std::exit(2);
  }
  for (int round = 0; round < 4; ++round) {
    DeviceBuffer canary(64 * kMiB);
    canary.Fill(0x5A);
    cuda::CUdeviceptr target = 0;
    if (api.cuMemAlloc(&target, kFileSize) != 0) std::exit(3);
    DropFileCache(path);
    fgds_io io{};
    io.opcode = FGDS_OP_READ;
    io.fd = fd;
    io.devptr = reinterpret_cast<void*>(target);
    io.size = kFileSize;
    if (fgds_io_submit(driver, &io, 1) != 1) std::exit(4);
    api.cuMemFree(target);
    // Likely at the freed address: memory that is not the I/O's any more.
    DeviceBuffer reused(kFileSize);
    reused.Fill(0x11);
    if (fgds_io_wait(driver, &io, -1) != 0) std::exit(5);
    if (io.result != -EFAULT && io.result != static_cast<int64_t>(kFileSize)) {
      std::fprintf(stderr, "result %lld\n", static_cast<long long>(io.result));
      std::exit(6);
    }
    for (const DeviceBuffer* b : {&canary, &reused}) {
      const uint8_t want = b == &canary ? 0x5A : 0x11;
      const std::vector<uint8_t> bytes = b->Download(0, b->size());
      for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != want) {
          std::fprintf(stderr, "%s corrupted at %zu (round %d)\n",
                       b == &canary ? "canary" : "reused", i, round);
          std::exit(7);
        }
      }
    }
  }
  // The context is healthy: a normal read still works.
  DeviceBuffer again(kMiB);
  if (fgds_pread(driver, fd, again.ptr(), kMiB, 0, 0) !=
      static_cast<ssize_t>(kMiB)) {
    std::fprintf(stderr, "read after: %s\n", fgds_last_error());
    std::exit(8);
  }
  if (fgds_driver_close(driver) != 0) std::exit(9);
  std::exit(0);
}

TEST_F(GpuLifetimeTest, FreeingABufferUnderIoCorruptsNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(FreeWhileReading(fd_, path_), ::testing::ExitedWithCode(0), "");
}

TEST_F(GpuLifetimeTest, CloseRefusesWhileAsyncIoIsOutstanding) {
  fgds_driver* driver = nullptr;
  ASSERT_EQ(fgds_driver_open(&driver, nullptr), 0) << fgds_last_error();
  DeviceBuffer buffer(16 * kMiB);
  fgds_io io = ReadIo(buffer.ptr(), 16 * kMiB);
  ASSERT_EQ(fgds_io_submit(driver, &io, 1), 1);
  EXPECT_EQ(fgds_driver_close(driver), -EBUSY);
  ASSERT_EQ(fgds_io_wait(driver, &io, -1), 0);
  EXPECT_EQ(io.result, static_cast<int64_t>(16 * kMiB));
  EXPECT_EQ(fgds_driver_close(driver), 0);
}

TEST_F(GpuLifetimeTest, HostMemoryIsNotDeviceMemory) {
  ScopedDriver driver;
  std::vector<uint8_t> pageable(kMiB);
  EXPECT_EQ(fgds_pread(driver.get(), fd_, pageable.data(), kMiB, 0, 0),
            -EFAULT);
  EXPECT_EQ(fgds_buf_register(driver.get(), pageable.data(), kMiB, 0), -EFAULT);
  const cuda::CudaApi& api = GpuEnv::Get().api();
  void* pinned = nullptr;
  ASSERT_EQ(api.cuMemHostAlloc(&pinned, kMiB, 0), 0);
  EXPECT_EQ(fgds_pread(driver.get(), fd_, pinned, kMiB, 0, 0), -EFAULT);
  EXPECT_NE(std::string(fgds_last_error()).find("host memory"),
            std::string::npos)
      << fgds_last_error();
  api.cuMemFreeHost(pinned);
  // Past the end of an allocation.
  DeviceBuffer small(kMiB);
  EXPECT_EQ(fgds_pread(driver.get(), fd_, small.ptr(), kMiB, 0, 1), -EFAULT);
}

}  // namespace
}  // namespace fgds::testing
