#include "common/page_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fgds {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class PageCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::absolute("fgds-page-cache-test." +
                                      std::to_string(getpid()))
                .string();
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd_, 0);
    std::vector<char> bytes(4 * kMiB + 100, 'x');
    ASSERT_EQ(pwrite(fd_, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
  }
  void TearDown() override {
    close(fd_);
    unlink(path_.c_str());
  }
  // Drop stays per file: no global drop_caches in a unit test.
  void Drop() {
    ASSERT_EQ(fdatasync(fd_), 0);
    ASSERT_EQ(posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED), 0);
  }
  std::string path_;
  int fd_ = -1;
};

TEST_F(PageCacheTest, JustWrittenIsCached) {
  EXPECT_TRUE(FullyCached(fd_, 0, 2 * kMiB));
  // The last chunk runs past the end of the file: its existing pages count.
  EXPECT_TRUE(FullyCached(fd_, 4 * kMiB, 2 * kMiB));
  EXPECT_FALSE(FullyCached(fd_, 8 * kMiB, kMiB));  // nothing there
  EXPECT_FALSE(FullyCached(fd_, 0, 0));
}

TEST_F(PageCacheTest, DroppedIsNotCachedAndAskingReadsNothing) {
  Drop();
  EXPECT_FALSE(FullyCached(fd_, 0, 2 * kMiB));
  // Asking must not start readahead: still nothing cached afterwards.
  for (int i = 0; i < 8; ++i) FullyCached(fd_, i * 512 * 1024, 512 * 1024);
  usleep(100 * 1000);
  EXPECT_FALSE(FullyCached(fd_, 0, 4096));
  EXPECT_FALSE(FullyCached(fd_, 2 * kMiB, 4096));
}

TEST_F(PageCacheTest, PartlyCachedIsNotFullyCached) {
  Drop();
  std::vector<char> page(4096);
  ASSERT_EQ(pread(fd_, page.data(), page.size(), 0), 4096);
  EXPECT_TRUE(FullyCached(fd_, 0, 4096));
  // Readahead may have brought in more, but not 4 MiB from one page read.
  EXPECT_FALSE(FullyCached(fd_, 0, 4 * kMiB));
}

}  // namespace
}  // namespace fgds
