// FUSE over io_uring (fusefs/fuse_features.h): where the kernel offers it
// (the fuse module's enable_uring parameter) and libfuse has it (3.18+),
// the requests that reach the daemon come through io_uring rings; with the
// parameter off, or --fuse-uring off, they come through /dev/fuse reads,
// and /.fgds/stats says which and why. The data must be right either way
// (run with --passthrough off, so reads and writes reach the daemon too).
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lib/mount_features.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

constexpr char kEnableUring[] = "/sys/module/fuse/parameters/enable_uring";

std::string ReadParam() {
  std::ifstream in(kEnableUring);
  std::string value;
  std::getline(in, value);
  return value;
}

bool WriteParam(const std::string& value) {
  std::ofstream out(kEnableUring);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

class FuseUringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    saved_ = ReadParam();
  }
  // The parameter is the kernel's, for every mount: put it back.
  void TearDown() override {
    fs_.reset();
    if (!saved_.empty()) WriteParam(saved_ == "Y" ? "1" : "0");
  }
  void Mount(const std::vector<std::string>& args) {
    MountOptions options;
    options.extra_args = args;
    options.extra_args.push_back("--passthrough");
    options.extra_args.push_back("off");
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }
  // Writes, reads back and lists through the mount: right data.
  void Exercise() {
    const std::string path = fs_->mountpoint() + "/f";
    std::vector<char> data(1 << 20);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
    int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
              static_cast<ssize_t>(data.size()));
    ASSERT_EQ(fsync(fd), 0);
    close(fd);
    // Through the backing file: the bytes landed.
    std::vector<char> got(data.size());
    fd = open((fs_->backing() + "/f").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pread(fd, got.data(), got.size(), 0),
              static_cast<ssize_t>(got.size()));
    close(fd);
    EXPECT_EQ(std::memcmp(got.data(), data.data(), data.size()), 0);
    // And back through the mount, past its page cache.
    fd = open(path.c_str(), O_RDONLY | O_DIRECT);
    ASSERT_GE(fd, 0);
    void* buf = nullptr;
    ASSERT_EQ(posix_memalign(&buf, 4096, data.size()), 0);
    EXPECT_EQ(pread(fd, buf, data.size(), 0),
              static_cast<ssize_t>(data.size()));
    EXPECT_EQ(std::memcmp(buf, data.data(), data.size()), 0);
    free(buf);
    close(fd);
    EXPECT_EQ(unlink(path.c_str()), 0);
  }
  std::string saved_;
  std::unique_ptr<MountedFs> fs_;
};

// --fuse-uring off: /dev/fuse, whatever the kernel offers.
TEST_F(FuseUringTest, OffUsesDevFuse) {
  Mount({"--fuse-uring", "off"});
  Exercise();
  const std::string features = MountFeatures(fs_->mountpoint());
  EXPECT_NE(features.find("fuse-uring off: --fuse-uring off"),
            std::string::npos)
      << features;
  EXPECT_EQ(MountCounter(fs_->mountpoint(), "requests_fuse_uring"), 0u);
  EXPECT_GT(MountCounter(fs_->mountpoint(), "requests_dev_fuse"), 0u);
}

// The kernel's parameter off: auto falls back, and says why.
TEST_F(FuseUringTest, FallsBackWhereTheKernelHasItOff) {
  if (saved_.empty()) GTEST_SKIP() << "this kernel has no FUSE over io_uring";
  ASSERT_TRUE(WriteParam("0"));
  Mount({"--fuse-uring", "auto"});
  Exercise();
  const std::string features = MountFeatures(fs_->mountpoint());
  EXPECT_NE(features.find("fuse-uring off"), std::string::npos) << features;
  EXPECT_EQ(MountCounter(fs_->mountpoint(), "requests_fuse_uring"), 0u);
  EXPECT_GT(MountCounter(fs_->mountpoint(), "requests_dev_fuse"), 0u);
}

// The parameter on: a default mount (--fuse-uring auto) serves its
// requests through io_uring, every reply from the ring thread that took
// the request: libfuse 3.18.3 submits a ring's replies without a lock on
// the thread that waits on it, so a reply from another thread (a read
// completed by the io_uring engine) races it; the queue's entries are then
// corrupted, libfuse logs "Failed to get a ring SQEs" and keeps the ring's
// lock, and that CPU's requests are never answered (ops_file.cc, DoRead;
// UsrbioCoherenceBusyTest's FuseUring case hung so).
TEST_F(FuseUringTest, OnByDefaultWhereOffered) {
  if (saved_.empty()) GTEST_SKIP() << "this kernel has no FUSE over io_uring";
  ASSERT_TRUE(WriteParam("1"));
  Mount({});
  const std::string features = MountFeatures(fs_->mountpoint());
  if (features.find("cannot ask for it") != std::string::npos ||
      features.find("built without io_uring") != std::string::npos) {
    GTEST_SKIP() << "libfuse without io_uring: " << features;
  }
  Exercise();
  EXPECT_NE(features.find("; fuse-uring on"), std::string::npos) << features;
  EXPECT_GT(MountCounter(fs_->mountpoint(), "requests_fuse_uring"), 10u);
  EXPECT_EQ(MountCounter(fs_->mountpoint(), "uring_replies_off_thread"), 0u);
}

}  // namespace
}  // namespace fgds::testing
