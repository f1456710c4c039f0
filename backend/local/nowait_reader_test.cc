// ReadNowait (issue 17): a batch of cached reads in one io_uring_enter on
// the thread's own ring, with preadv2's results, also past the ring's
// depth, for bad descriptors and end of file, and on the preadv2 fallback.
#include "backend/local/nowait_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

class NowaitReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/nowait_reader_test.XXXXXX";
    fd_ = mkstemp(path);
    ASSERT_GE(fd_, 0);
    unlink(path);
    data_.resize(kSize);
    for (size_t i = 0; i < kSize; ++i) data_[i] = static_cast<char>(i * 13);
    ASSERT_EQ(pwrite(fd_, data_.data(), kSize, 0), static_cast<ssize_t>(kSize));
  }
  void TearDown() override { close(fd_); }

  // 200 reads of 4 KiB at scattered offsets (past the ring's 64 entries),
  // one at end of file (short), one of a closed descriptor; checks each.
  void ReadAndCheck() {
    constexpr size_t kReads = 200;
    std::vector<std::string> bufs(kReads + 2, std::string(4096, '\0'));
    std::vector<NowaitRead> reads;
    for (size_t i = 0; i < kReads; ++i) {
      const uint64_t offset = (i * 7919) % (kSize - 4096);
      reads.push_back({fd_, bufs[i].data(), 4096, offset, 0});
    }
    reads.push_back({fd_, bufs[kReads].data(), 4096, kSize - 100, 0});
    reads.push_back({-1, bufs[kReads + 1].data(), 4096, 0, 0});
    ReadNowait(std::span<NowaitRead>(reads));
    for (size_t i = 0; i < kReads; ++i) {
      ASSERT_EQ(reads[i].result, 4096) << "read " << i;
      ASSERT_EQ(memcmp(bufs[i].data(), data_.data() + reads[i].offset, 4096), 0)
          << "read " << i;
    }
    EXPECT_EQ(reads[kReads].result, 100);
    EXPECT_EQ(memcmp(bufs[kReads].data(), data_.data() + kSize - 100, 100), 0);
    EXPECT_EQ(reads[kReads + 1].result, -EBADF);
  }

  static constexpr size_t kSize = 1 << 20;
  int fd_ = -1;
  std::string data_;
};

TEST_F(NowaitReaderTest, BatchReadsCachedRangesThroughTheThreadsRing) {
  // On a fresh thread: its ring is set up at its first batch.
  std::thread t([this] {
    ReadAndCheck();
    // Where io_uring exists at all (the CI and device kernels), the batch
    // went through it, not the fallback.
    if (access("/proc/sys/kernel/io_uring_disabled", F_OK) == 0) {
      int dfd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY);
      char c = '0';
      if (dfd >= 0) {
        (void)!read(dfd, &c, 1);
        close(dfd);
      }
      if (c == '0') {
        EXPECT_TRUE(NowaitUsesUring());
      }
    }
    // A second batch on the same ring.
    ReadAndCheck();
  });
  t.join();
}

TEST_F(NowaitReaderTest, FallbackGivesTheSameResults) {
  std::thread t([this] {
    NowaitForceFallback();
    ReadAndCheck();
    EXPECT_FALSE(NowaitUsesUring());
  });
  t.join();
}

TEST_F(NowaitReaderTest, SwitchedOffProcessWideThreadsUsePreadv2) {
  SetNowaitUring(false);
  std::thread t([this] {
    ReadAndCheck();
    EXPECT_FALSE(NowaitUsesUring());
  });
  t.join();
  SetNowaitUring(true);
}

TEST_F(NowaitReaderTest, UncachedPagesAreNotWaitedFor) {
  // An empty batch is a no-op.
  ReadNowait({});
  // A file on a disk file system whose pages were dropped: RWF_NOWAIT
  // gives EAGAIN or a short read, never a wait; tmpfs keeps its pages (the
  // whole read comes). Either way the result is one pread could give.
  char path[] = "/var/tmp/nowait_reader_test.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) GTEST_SKIP() << "no /var/tmp";
  unlink(path);
  std::string data(1 << 20, 'x');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  ASSERT_EQ(fsync(fd), 0);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::string buf(4096, '\0');
  NowaitRead read{fd, buf.data(), 4096, 512 << 10, 0};
  ReadNowait({&read, 1});
  EXPECT_TRUE(read.result == -EAGAIN ||
              (read.result >= 0 && read.result <= 4096))
      << read.result;
  if (read.result > 0) {
    EXPECT_EQ(memcmp(buf.data(), data.data(), read.result), 0);
  }
  close(fd);
}

}  // namespace
}  // namespace fgds::backend
