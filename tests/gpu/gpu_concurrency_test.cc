// Many threads, many buffers, one driver: the normal case for loaders
// (16 reader threads are common), and the one GDS-based loaders race in.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kFileSize = 96 * kMiB + 17;

class GpuConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FGDS_REQUIRE_GPU();
    data_ = RandomBytes(kFileSize, 5);
    path_ = dir_.WriteFile("data", data_);
  }
  ScratchDir dir_;
  std::vector<uint8_t> data_;
  std::string path_;
};

TEST_F(GpuConcurrencyTest, ThreadsReadAndWriteTheirOwnBuffers) {
  ScopedDriver driver;
  const int rfd = open(path_.c_str(), O_RDONLY);
  const std::string out =
      dir_.WriteFile("out", std::vector<uint8_t>(kFileSize));
  const int wfd = open(out.c_str(), O_RDWR);
  ASSERT_GE(rfd, 0);
  ASSERT_GE(wfd, 0);
  constexpr int kThreads = 16;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      GpuEnv::Get().MakeCurrent();
      std::mt19937_64 rng(100 + t);
      DeviceBuffer buffer(12 * kMiB);
      const bool registered = t % 2 == 0;
      if (registered && fgds_buf_register(driver.get(), buffer.ptr(),
                                          buffer.size(), 0) != 0) {
        ++failures;
      }
      const uint64_t stripe = kFileSize / kThreads;
      for (int i = 0; i < 20; ++i) {
        const uint64_t size = 1 + rng() % (8 * kMiB);
        const uint64_t offset = rng() % (kFileSize - size);
        const uint64_t buf_offset = rng() % (4 * kMiB);
        if (fgds_pread(driver.get(), rfd, buffer.ptr(), size,
                       static_cast<off_t>(offset),
                       static_cast<off_t>(buf_offset)) !=
                static_cast<ssize_t>(size) ||
            std::memcmp(buffer.Download(buf_offset, size).data(),
                        &data_[offset], size) != 0) {
          ++failures;
        }
        // Write part of what was read into this thread's stripe of `out`.
        const uint64_t wsize = std::min(size, stripe);
        const uint64_t woffset = t * stripe + rng() % (stripe - wsize + 1);
        if (fgds_pwrite(driver.get(), wfd, buffer.ptr(), wsize,
                        static_cast<off_t>(woffset),
                        static_cast<off_t>(buf_offset)) !=
            static_cast<ssize_t>(wsize)) {
          ++failures;
          continue;
        }
        std::vector<uint8_t> back(wsize);
        if (pread(wfd, back.data(), wsize, static_cast<off_t>(woffset)) !=
                static_cast<ssize_t>(wsize) ||
            std::memcmp(back.data(), &data_[offset], wsize) != 0) {
          ++failures;
        }
      }
      if (registered && fgds_buf_deregister(driver.get(), buffer.ptr()) != 0) {
        ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  close(rfd);
  close(wfd);
}

// Many asynchronous I/Os in flight at once, completing in any order, each
// landing in its own slice of one buffer.
TEST_F(GpuConcurrencyTest, ManyAsyncIosInFlight) {
  ScopedDriver driver;
  const int fd = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fgds_file_register(driver.get(), fd), 0);
  constexpr int kIos = 96;
  DeviceBuffer buffer(kIos * kMiB);
  std::vector<fgds_io> ios(kIos);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> offsets(kIos);
  for (int i = 0; i < kIos; ++i) {
    offsets[i] = rng() % (kFileSize - kMiB);
    ios[i] = {};
    ios[i].opcode = FGDS_OP_READ;
    ios[i].fd = fd;
    ios[i].devptr = buffer.ptr();
    ios[i].size = kMiB;
    ios[i].file_offset = static_cast<int64_t>(offsets[i]);
    ios[i].buf_offset = static_cast<int64_t>(i * kMiB);
    ios[i].userdata = static_cast<uint64_t>(i);
  }
  ASSERT_EQ(fgds_io_submit(driver.get(), ios.data(), kIos), kIos);
  // Wait in reverse: completion order must not matter.
  for (int i = kIos - 1; i >= 0; --i) {
    ASSERT_EQ(fgds_io_wait(driver.get(), &ios[i], -1), 0);
    EXPECT_EQ(ios[i].result, static_cast<int64_t>(kMiB));
    EXPECT_EQ(ios[i].userdata, static_cast<uint64_t>(i));
  }
  const std::vector<uint8_t> device = buffer.Download(0, buffer.size());
  for (int i = 0; i < kIos; ++i) {
    ASSERT_EQ(std::memcmp(&device[i * kMiB], &data_[offsets[i]], kMiB), 0) << i;
  }
  EXPECT_EQ(fgds_file_deregister(driver.get(), fd), 0);
  close(fd);
}

}  // namespace
}  // namespace fgds::testing
