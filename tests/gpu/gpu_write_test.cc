// GPU -> file through libfgds: aligned and unaligned writes checked byte for
// byte in the file, and a round trip back into another device buffer.
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

struct Range {
  uint64_t file_offset;
  uint64_t size;
  uint64_t buf_offset;
};

const Range kRanges[] = {
    {0, 8 * kMiB, 0},
    {4096, 4 * kMiB, 4096},
    {3, 5 * kMiB + 11, 1},
    {100, 10, 0},
    {4095, 2, 7},
    {2 * kMiB - 1, 2 * kMiB + 2, 100},
    {20 * kMiB + 5, 3 * kMiB, 65536},  // extends the file
};

class GpuWriteTest : public ::testing::Test {
 protected:
  void SetUp() override { FGDS_REQUIRE_GPU(); }
  ScratchDir dir_;
};

TEST_F(GpuWriteTest, RangesLandByteForByte) {
  for (int flags : {O_RDWR, O_RDWR | O_DIRECT}) {
    SCOPED_TRACE(flags & O_DIRECT ? "caller fd O_DIRECT"
                                  : "caller fd buffered");
    std::vector<uint8_t> expected = RandomBytes(16 * kMiB, 2);
    const std::string path = dir_.WriteFile("out", expected);
    const int fd = open(path.c_str(), flags);
    ASSERT_GE(fd, 0);
    ScopedDriver driver;
    uint64_t seed = 10;
    for (const Range& r : kRanges) {
      SCOPED_TRACE(::testing::Message()
                   << "offset " << r.file_offset << " size " << r.size);
      const std::vector<uint8_t> bytes = RandomBytes(r.size, seed++);
      DeviceBuffer buffer(r.buf_offset + r.size);
      buffer.Upload(r.buf_offset, bytes.data(), r.size);
      ASSERT_EQ(fgds_pwrite(driver.get(), fd, buffer.ptr(), r.size,
                            static_cast<off_t>(r.file_offset),
                            static_cast<off_t>(r.buf_offset)),
                static_cast<ssize_t>(r.size))
          << fgds_last_error();
      if (expected.size() < r.file_offset + r.size) {
        expected.resize(r.file_offset + r.size);
      }
      std::memcpy(&expected[r.file_offset], bytes.data(), r.size);
    }
    close(fd);
    EXPECT_TRUE(dir_.ReadFile("out") == expected);
  }
}

TEST_F(GpuWriteTest, RoundTripThroughTheFile) {
  ScopedDriver driver;
  const std::vector<uint8_t> bytes = RandomBytes(20 * kMiB + 333, 3);
  DeviceBuffer source(bytes.size() + 64);
  source.Upload(7, bytes.data(), bytes.size());
  const std::string path = dir_.path() + "/roundtrip";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  fgds_io write{};
  write.opcode = FGDS_OP_WRITE;
  write.fd = fd;
  write.devptr = source.ptr();
  write.size = bytes.size();
  write.file_offset = 3;
  write.buf_offset = 7;
  ASSERT_EQ(fgds_io_batch(driver.get(), &write, 1), 0);
  ASSERT_EQ(write.result, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(write.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(write.source & FGDS_SRC_O_DIRECT, 0u) << write.source;
  EXPECT_NE(write.source & FGDS_SRC_BUFFERED, 0u) << write.source;

  DeviceBuffer target(bytes.size() + 64);
  ASSERT_EQ(fgds_pread(driver.get(), fd, target.ptr(), bytes.size(), 3, 5),
            static_cast<ssize_t>(bytes.size()));
  EXPECT_TRUE(target.Download(5, bytes.size()) == bytes);
  close(fd);
}

TEST_F(GpuWriteTest, ReadOnlyFdIsBadf) {
  ScopedDriver driver;
  const std::string path = dir_.WriteFile("ro", RandomBytes(4096, 4));
  const int fd = open(path.c_str(), O_RDONLY);
  DeviceBuffer buffer(4096);
  EXPECT_EQ(fgds_pwrite(driver.get(), fd, buffer.ptr(), 4096, 0, 0), -EBADF);
  close(fd);
}

}  // namespace
}  // namespace fgds::testing
