// The C API edge: argument checks, errno untouched, messages, and the
// batch/async paths (on fake device memory through WrapDriverForTesting).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/direct/c_api_internal.h"
#include "usrbio/direct/fake_device_ops.h"

namespace fgds::direct {
namespace {

constexpr int kSentinelErrno = 4242;

TEST(CApiTest, OpenWithoutGpuIsNoDeviceAndSaysWhy) {
  if (cuda::Cuda().api != nullptr) GTEST_SKIP() << "a CUDA driver is present";
  fgds_driver* driver = reinterpret_cast<fgds_driver*>(0x1);
  errno = kSentinelErrno;
  EXPECT_EQ(fgds_driver_open(&driver, nullptr), -ENODEV);
  EXPECT_EQ(errno, kSentinelErrno);
  EXPECT_EQ(driver, nullptr);
  const std::string why = fgds_last_error();
  EXPECT_NE(why.find("libcuda.so.1"), std::string::npos) << why;
}

TEST(CApiTest, ParamsAreCheckedBeforeTheDriverIsTouched) {
  fgds_driver_params params{};
  params.reserved[0] = 1;
  fgds_driver* driver = nullptr;
  errno = kSentinelErrno;
  EXPECT_EQ(fgds_driver_open(&driver, &params), -EINVAL);
  EXPECT_EQ(errno, kSentinelErrno);
  EXPECT_NE(std::string(fgds_last_error()).find("reserved"), std::string::npos);
  params = {};
  params.flags = 0x80;
  EXPECT_EQ(fgds_driver_open(&driver, &params), -EINVAL);
  EXPECT_EQ(fgds_driver_open(nullptr, nullptr), -EINVAL);
}

TEST(CApiTest, NullDriverIsInvalidEverywhere) {
  errno = kSentinelErrno;
  fgds_io io{};
  fgds_driver_info info;
  fgds_driver_stats stats;
  EXPECT_EQ(fgds_driver_close(nullptr), -EINVAL);
  EXPECT_EQ(fgds_driver_query(nullptr, &info), -EINVAL);
  EXPECT_EQ(fgds_driver_get_stats(nullptr, &stats), -EINVAL);
  EXPECT_EQ(fgds_buf_register(nullptr, &io, 1, 0), -EINVAL);
  EXPECT_EQ(fgds_buf_deregister(nullptr, &io), -EINVAL);
  EXPECT_EQ(fgds_file_register(nullptr, 0), -EINVAL);
  EXPECT_EQ(fgds_file_deregister(nullptr, 0), -EINVAL);
  EXPECT_EQ(fgds_pread(nullptr, 0, &io, 1, 0, 0), -EINVAL);
  EXPECT_EQ(fgds_pwrite(nullptr, 0, &io, 1, 0, 0), -EINVAL);
  EXPECT_EQ(fgds_io_batch(nullptr, &io, 1), -EINVAL);
  EXPECT_EQ(fgds_io_submit(nullptr, &io, 1), -EINVAL);
  EXPECT_EQ(fgds_io_wait(nullptr, &io, 0), -EINVAL);
  EXPECT_EQ(errno, kSentinelErrno);
}

// A driver on fake device memory behind the real C API.
class CApiFakeTest : public testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "fgds-capi-test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = std::filesystem::absolute(templ).string();
    auto ops = std::make_unique<FakeDeviceOps>();
    ops_ = ops.get();
    DriverConfig config;
    config.workers = 2;
    config.slots_per_worker = 2;
    config.chunk_bytes = 64 * 1024;
    config.staging_bytes = 4 * config.chunk_bytes;
    std::unique_ptr<Driver> impl;
    std::string message;
    ASSERT_EQ(Driver::Open(config, std::move(ops), &impl, &message), 0);
    driver_ = WrapDriverForTesting(std::move(impl));

    data_.resize(1 << 20);
    for (size_t i = 0; i < data_.size(); ++i)
      data_[i] = static_cast<uint8_t>(i * 7 + i / 251);
    const std::string path = dir_ + "/data";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(pwrite(fd_, data_.data(), data_.size(), 0),
              static_cast<ssize_t>(data_.size()));
  }
  void TearDown() override {
    if (driver_ != nullptr) {
      EXPECT_EQ(fgds_driver_close(driver_), 0);
    }
    close(fd_);
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  FakeDeviceOps* ops_ = nullptr;
  fgds_driver* driver_ = nullptr;
  std::vector<uint8_t> data_;
  int fd_ = -1;
};

TEST_F(CApiFakeTest, PreadPwriteRoundTrip) {
  const uint64_t dev = ops_->Alloc(data_.size());
  void* ptr = reinterpret_cast<void*>(dev);
  errno = kSentinelErrno;
  ASSERT_EQ(fgds_file_register(driver_, fd_), 0);
  EXPECT_EQ(fgds_file_register(driver_, fd_), -EEXIST);
  ASSERT_EQ(fgds_buf_register(driver_, ptr, data_.size(), 0), 0);
  EXPECT_EQ(fgds_pread(driver_, fd_, ptr, 300000, 12345, 10), 300000);
  EXPECT_EQ(
      std::memcmp(reinterpret_cast<uint8_t*>(dev) + 10, &data_[12345], 300000),
      0);
  EXPECT_EQ(fgds_pwrite(driver_, fd_, ptr, 300000, 600001, 10), 300000);
  std::vector<uint8_t> back(300000);
  ASSERT_EQ(pread(fd_, back.data(), back.size(), 600001), 300000);
  EXPECT_EQ(std::memcmp(back.data(), &data_[12345], back.size()), 0);
  EXPECT_EQ(errno, kSentinelErrno);
  EXPECT_EQ(fgds_buf_deregister(driver_, ptr), 0);
  EXPECT_EQ(fgds_buf_deregister(driver_, ptr), -ENOENT);
  EXPECT_EQ(fgds_file_deregister(driver_, fd_), 0);
  EXPECT_EQ(fgds_file_deregister(driver_, fd_), -ENOENT);
}

TEST_F(CApiFakeTest, BatchReportsEachResultAndPath) {
  const uint64_t dev = ops_->Alloc(1 << 20);
  fgds_io ios[3] = {};
  for (int i = 0; i < 3; ++i) {
    ios[i].opcode = FGDS_OP_READ;
    ios[i].fd = fd_;
    ios[i].devptr = reinterpret_cast<void*>(dev);
    ios[i].size = 100000;
    ios[i].file_offset = 100000 * i + 1;
    ios[i].buf_offset = 100000 * i;
    ios[i].userdata = 77 + i;
  }
  ios[2].fd = -1;  // fails alone, as its result
  ASSERT_EQ(fgds_io_batch(driver_, ios, 3), 0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ios[i].result, 100000);
    EXPECT_EQ(ios[i].path, FGDS_GPU_PATH_BOUNCE);
    EXPECT_NE(ios[i].source, 0u);
    EXPECT_EQ(ios[i].internal, nullptr);
    EXPECT_EQ(ios[i].userdata, 77u + i);
    EXPECT_EQ(std::memcmp(reinterpret_cast<uint8_t*>(dev) + 100000 * i,
                          &data_[100000 * i + 1], 100000),
              0);
  }
  EXPECT_EQ(ios[2].result, -EBADF);
  EXPECT_EQ(ios[2].path, FGDS_GPU_PATH_NONE);
  // A malformed entry rejects the whole batch before anything runs.
  ios[1].reserved[0] = 1;
  ios[0].result = 12345;
  EXPECT_EQ(fgds_io_batch(driver_, ios, 3), -EINVAL);
  EXPECT_EQ(ios[0].result, 12345);
}

TEST_F(CApiFakeTest, AsyncSubmitWaitAndCloseRefusal) {
  ops_->SetPendingQueries(3);
  const uint64_t dev = ops_->Alloc(1 << 20);
  fgds_io ios[4] = {};
  for (int i = 0; i < 4; ++i) {
    ios[i].opcode = FGDS_OP_READ;
    ios[i].fd = fd_;
    ios[i].devptr = reinterpret_cast<void*>(dev);
    ios[i].size = 1 << 18;
    ios[i].file_offset = (1 << 18) * i;
    ios[i].buf_offset = (1 << 18) * (3 - i);
  }
  ASSERT_EQ(fgds_io_submit(driver_, ios, 4), 4);
  // Resubmitting an io in flight is rejected.
  EXPECT_EQ(fgds_io_submit(driver_, ios, 1), -EINVAL);
  EXPECT_EQ(fgds_driver_close(driver_), -EBUSY);
  for (int i = 0; i < 4; ++i) {
    int status;
    while ((status = fgds_io_wait(driver_, &ios[i], 1000)) == -ETIME) {
    }
    ASSERT_EQ(status, 0);
    EXPECT_EQ(ios[i].result, 1 << 18);
    EXPECT_EQ(std::memcmp(reinterpret_cast<uint8_t*>(dev) + (1 << 18) * (3 - i),
                          &data_[(1 << 18) * i], 1 << 18),
              0);
  }
  EXPECT_EQ(fgds_io_wait(driver_, &ios[0], 0), -EINVAL);  // not in flight
  EXPECT_EQ(fgds_driver_close(driver_), 0);
  driver_ = nullptr;
}

TEST_F(CApiFakeTest, QueryExplainsThePath) {
  fgds_driver_info info;
  ASSERT_EQ(fgds_driver_query(driver_, &info), 0);
  EXPECT_EQ(info.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_EQ(info.workers, 2u);
  EXPECT_EQ(info.staging_bytes, 4u * 64 * 1024);
  EXPECT_STRNE(info.direct_unavailable, "");
}

}  // namespace
}  // namespace fgds::direct
