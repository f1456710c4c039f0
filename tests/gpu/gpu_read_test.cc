// File -> GPU through libfgds, every byte checked on the device: aligned
// and unaligned ranges, sub-ranges of larger allocations, end of file, and
// which file path (page cache, O_DIRECT, buffered) the bytes took.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kFileSize = 24 * kMiB + 4321;

struct Range {
  uint64_t file_offset;
  uint64_t size;
  uint64_t buf_offset;
};

// Aligned, unaligned head and tail, inside one block, one byte, chunk
// (2 MiB) edges, to the last byte.
const Range kRanges[] = {
    {0, 24 * kMiB, 0},
    {4096, 8 * kMiB, 4096},
    {1, 9 * kMiB + 7, 3},
    {100, 10, 0},
    {4095, 2, 1},
    {2 * kMiB - 1, 2 * kMiB + 2, 100},
    {12345, 5 * kMiB + 4321, 4097},
    {kFileSize - 10, 10, 0},
    {kFileSize - 3 * kMiB - 1, 3 * kMiB + 1, 65536},
};

class GpuReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FGDS_REQUIRE_GPU();
    data_ = RandomBytes(kFileSize, 1);
    path_ = dir_.WriteFile("data", data_);
    fd_ = open(path_.c_str(), O_RDONLY);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
  }

  // ReadAndCheck reads `r` into a fresh buffer with guard bytes around the
  // target range and checks the range and the guards.
  void ReadAndCheck(fgds_driver* driver, const Range& r) {
    SCOPED_TRACE(::testing::Message() << "offset " << r.file_offset << " size "
                                      << r.size << " buf " << r.buf_offset);
    DeviceBuffer buffer(r.buf_offset + r.size + 4096);
    buffer.Fill(0xAB);
    ASSERT_EQ(fgds_pread(driver, fd_, buffer.ptr(), r.size,
                         static_cast<off_t>(r.file_offset),
                         static_cast<off_t>(r.buf_offset)),
              static_cast<ssize_t>(r.size))
        << fgds_last_error();
    const std::vector<uint8_t> device = buffer.Download(0, buffer.size());
    ASSERT_EQ(std::memcmp(&device[r.buf_offset], &data_[r.file_offset], r.size),
              0);
    for (uint64_t i = 0; i < r.buf_offset; ++i) ASSERT_EQ(device[i], 0xAB) << i;
    for (uint64_t i = r.buf_offset + r.size; i < device.size(); ++i) {
      ASSERT_EQ(device[i], 0xAB) << i;
    }
  }

  ScratchDir dir_;
  std::vector<uint8_t> data_;
  std::string path_;
  int fd_ = -1;
};

TEST_F(GpuReadTest, RangesLandByteForByteWarm) {
  ScopedDriver driver;
  for (const Range& r : kRanges) ReadAndCheck(driver.get(), r);
}

TEST_F(GpuReadTest, RangesLandByteForByteCold) {
  fgds_driver_params params{};
  params.flags = FGDS_DRIVER_NO_PAGE_CACHE;
  ScopedDriver driver(&params);
  for (const Range& r : kRanges) {
    DropFileCache(path_);
    ReadAndCheck(driver.get(), r);
  }
}

TEST_F(GpuReadTest, RegisteredFileAndBuffer) {
  ScopedDriver driver;
  ASSERT_EQ(fgds_file_register(driver.get(), fd_), 0) << fgds_last_error();
  DeviceBuffer buffer(kFileSize);
  ASSERT_EQ(fgds_buf_register(driver.get(), buffer.ptr(), kFileSize, 0), 0)
      << fgds_last_error();
  ASSERT_EQ(fgds_pread(driver.get(), fd_, buffer.ptr(), kFileSize, 0, 0),
            static_cast<ssize_t>(kFileSize));
  EXPECT_EQ(buffer.Download(0, kFileSize), data_);
  // Past the registered buffer's end: rejected, not written.
  EXPECT_EQ(fgds_pread(driver.get(), fd_, buffer.ptr(), 2, 0, kFileSize - 1),
            -EINVAL);
  EXPECT_EQ(fgds_buf_deregister(driver.get(), buffer.ptr()), 0);
  EXPECT_EQ(fgds_file_deregister(driver.get(), fd_), 0);
}

// A tensor inside a caching allocator's block: two registered sub-ranges of
// one allocation, read at once, and nothing around them touched.
TEST_F(GpuReadTest, SubRangesOfOneAllocation) {
  ScopedDriver driver;
  DeviceBuffer block(64 * kMiB);
  block.Fill(0xAB);
  const uint64_t a = block.address() + kMiB + 123;
  const uint64_t b = block.address() + 20 * kMiB + 1;
  void* pa = reinterpret_cast<void*>(a);
  void* pb = reinterpret_cast<void*>(b);
  ASSERT_EQ(fgds_buf_register(driver.get(), pa, 8 * kMiB, 0), 0)
      << fgds_last_error();
  ASSERT_EQ(fgds_buf_register(driver.get(), pb, 8 * kMiB, 0), 0);
  EXPECT_EQ(fgds_buf_register(driver.get(), pb, 10, 0), -EEXIST);
  fgds_io ios[2] = {};
  ios[0].opcode = FGDS_OP_READ;
  ios[0].fd = fd_;
  ios[0].devptr = pa;
  ios[0].size = 8 * kMiB;
  ios[0].file_offset = 777;
  ios[1] = ios[0];
  ios[1].devptr = pb;
  ios[1].size = 8 * kMiB - 1000;
  ios[1].file_offset = 10 * kMiB;
  ios[1].buf_offset = 1000;
  ASSERT_EQ(fgds_io_batch(driver.get(), ios, 2), 0);
  EXPECT_EQ(ios[0].result, static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(ios[1].result, static_cast<int64_t>(8 * kMiB - 1000));
  const std::vector<uint8_t> device = block.Download(0, block.size());
  std::vector<uint8_t> expected(64 * kMiB, 0xAB);
  std::memcpy(&expected[kMiB + 123], &data_[777], 8 * kMiB);
  std::memcpy(&expected[20 * kMiB + 1 + 1000], &data_[10 * kMiB],
              8 * kMiB - 1000);
  EXPECT_TRUE(device == expected);
  EXPECT_EQ(fgds_buf_deregister(driver.get(), pa), 0);
  EXPECT_EQ(fgds_buf_deregister(driver.get(), pb), 0);
}

TEST_F(GpuReadTest, EndOfFile) {
  ScopedDriver driver;
  DeviceBuffer buffer(8 * kMiB);
  const uint64_t from = kFileSize - 3 * kMiB - 5;
  EXPECT_EQ(fgds_pread(driver.get(), fd_, buffer.ptr(), 8 * kMiB,
                       static_cast<off_t>(from), 0),
            static_cast<ssize_t>(kFileSize - from));
  EXPECT_EQ(buffer.Download(0, kFileSize - from),
            std::vector<uint8_t>(data_.begin() + from, data_.end()));
  EXPECT_EQ(fgds_pread(driver.get(), fd_, buffer.ptr(), 4096,
                       static_cast<off_t>(kFileSize), 0),
            0);
  EXPECT_EQ(fgds_pread(driver.get(), fd_, buffer.ptr(), 0, 0, 0), 0);
}

// Every completion says how its bytes moved: the bounce path, and O_DIRECT
// for a cold aligned read, the page cache for a warm one.
TEST_F(GpuReadTest, CompletionReportsPathAndSource) {
  fgds_driver_params cold_params{};
  cold_params.flags = FGDS_DRIVER_NO_PAGE_CACHE;
  ScopedDriver cold(&cold_params);
  ScopedDriver warm;
  DeviceBuffer buffer(16 * kMiB);
  fgds_io io{};
  io.opcode = FGDS_OP_READ;
  io.fd = fd_;
  io.devptr = buffer.ptr();
  io.size = 16 * kMiB;
  DropFileCache(path_);
  ASSERT_EQ(fgds_io_batch(cold.get(), &io, 1), 0);
  EXPECT_EQ(io.result, static_cast<int64_t>(16 * kMiB));
  EXPECT_EQ(io.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_EQ(io.source, FGDS_SRC_O_DIRECT);

  std::vector<uint8_t> sink(16 * kMiB);  // a buffered reader warms the cache
  ASSERT_EQ(pread(fd_, sink.data(), sink.size(), 0),
            static_cast<ssize_t>(sink.size()));
  io.result = 0;
  ASSERT_EQ(fgds_io_batch(warm.get(), &io, 1), 0);
  EXPECT_EQ(io.result, static_cast<int64_t>(16 * kMiB));
  EXPECT_EQ(io.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(io.source & FGDS_SRC_PAGE_CACHE, 0u) << io.source;
  EXPECT_EQ(buffer.Download(0, 16 * kMiB),
            std::vector<uint8_t>(data_.begin(), data_.begin() + 16 * kMiB));

  fgds_driver_stats stats;
  ASSERT_EQ(fgds_driver_get_stats(warm.get(), &stats), 0);
  EXPECT_EQ(stats.bytes_read, 16 * kMiB);
  EXPECT_EQ(stats.bytes_bounce, 16 * kMiB);
  EXPECT_EQ(stats.bytes_direct, 0u);
}

}  // namespace
}  // namespace fgds::testing
