// Two daemons serving the same CephFS, as two nodes of a cluster would:
// what one writes and closes (or fsyncs), the other reads, and the other's
// kernel caches (pages, attributes) are dropped when Ceph revokes the
// capabilities that let it cache them (docs/remote.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/mount_features.h"

namespace fgds::testing {
namespace {

constexpr size_t kFileSize = 3 << 20;  // partly in a second object

class CephCoherenceTest : public CephTest {
 protected:
  void SetUp() override {
    CephTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // B keeps the defaults (1 s attribute and entry timeouts).
    auto b = MountCeph("/" + name_);
    ASSERT_TRUE(b.ok()) << b.status();
    b_ = *std::move(b);
  }
  std::string OnA(const std::string& name) const { return dir_ + "/" + name; }
  std::string OnB(const std::string& name) const {
    return b_->mountpoint() + "/" + name;
  }

  // Writes version `v` of the file through A: open, write, fsync, close.
  static void WriteVersion(const std::string& path, uint64_t v) {
    std::vector<char> data(kFileSize);
    FillPattern(data.data(), data.size(), v, 0);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
              static_cast<ssize_t>(data.size()));
    ASSERT_EQ(fsync(fd), 0);
    ASSERT_EQ(close(fd), 0);
  }
  static bool HoldsVersion(int fd, uint64_t v) {
    std::vector<char> data(kFileSize);
    if (pread(fd, data.data(), data.size(), 0) !=
        static_cast<ssize_t>(data.size())) {
      return false;
    }
    return MatchesPattern(data.data(), data.size(), v, 0);
  }

  // A counter of the "# ceph:" line of `mountpoint`'s /.fgds/stats, e.g.
  // inval_data (invalidations the ceph backend passed to the kernel).
  static uint64_t CephCounter(const std::string& mountpoint,
                              const std::string& name) {
    const std::string stats = StatsInOneRead(mountpoint);
    const std::string key = " " + name + "=";
    size_t at = stats.find(key);
    return at == std::string::npos ? 0
                                   : std::stoull(stats.substr(at + key.size()));
  }
  // /.fgds/stats in one read(2): one FUSE read request, whatever the
  // text's length (the control file is direct I/O, and far below
  // max_read). Reading it to EOF in a stream's chunks costs a number of
  // requests that changes as the text grows past a chunk.
  static std::string StatsInOneRead(const std::string& mountpoint) {
    std::string stats(1 << 20, '\0');
    int fd = open((mountpoint + "/.fgds/stats").c_str(), O_RDONLY);
    if (fd < 0) return "";
    ssize_t n = read(fd, stats.data(), stats.size());
    close(fd);
    stats.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return stats;
  }
  // The FUSE reads the mount's daemon served, those of the stats file
  // included, as of one read of it (which it does not count yet).
  static uint64_t DaemonReads(const std::string& mountpoint) {
    const std::string stats = StatsInOneRead(mountpoint);
    size_t at = stats.find("\nread ");
    return at == std::string::npos ? 0 : std::stoull(stats.substr(at + 6));
  }
  static uint64_t InvalData(const std::string& mountpoint) {
    return CephCounter(mountpoint, "inval_data");
  }
  // Reads of `path` through a fresh descriptor, as FUSE read requests that
  // reached the mount's daemon (the kernel's cache served the others), and
  // whether it held version `v`.
  static uint64_t ReadsToDaemon(const std::string& mountpoint,
                                const std::string& path, uint64_t v,
                                bool* held) {
    // Reading the stats is a read of the mount too: exactly one request
    // each (DaemonReads), counted by the next.
    const uint64_t before = DaemonReads(mountpoint);
    int fd = open(path.c_str(), O_RDONLY);
    *held = fd >= 0 && HoldsVersion(fd, v);
    if (fd >= 0) close(fd);
    return DaemonReads(mountpoint) - before - 1;
  }

  // Reopens B's `f` (version `v`) until one open keeps B's cached pages
  // (no read reaches B's daemon), at most three times. A's release reaches
  // Ceph after its close returned and may still move the file's change
  // stamp: one more drop is the conservative answer, then it keeps. Each
  // open that keeps is counted once in kept_cache_opens.
  void ExpectAReopenKeepsThePages(uint64_t v) {
    bool kept_pages = false;
    for (int reopens = 1; !kept_pages && reopens <= 3; ++reopens) {
      const uint64_t kept = CephCounter(b_->mountpoint(), "kept_cache_opens");
      bool held = false;
      kept_pages = ReadsToDaemon(b_->mountpoint(), OnB("f"), v, &held) == 0;
      EXPECT_TRUE(held) << "version " << v;
      if (kept_pages) {
        EXPECT_EQ(CephCounter(b_->mountpoint(), "kept_cache_opens"), kept + 1);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    EXPECT_TRUE(kept_pages)
        << "B's reopens of version " << v << " never kept its pages";
  }

  std::unique_ptr<MountedFs> b_;
};

// Close-to-open: after A's close, B's next open reads the new bytes at
// once (the file's change attribute moved, so B's daemon drops the cached
// pages at that open; Ceph's capabilities make B's libcephfs fetch them).
TEST_F(CephCoherenceTest, OpenAfterCloseReadsTheNewData) {
  for (uint64_t v = 1; v <= 6; ++v) {
    WriteVersion(OnA("f"), v);
    int fd = open(OnB("f").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0) << strerror(errno);
    EXPECT_TRUE(HoldsVersion(fd, v)) << "version " << v;
    close(fd);
  }
}

// Close-to-open without fetching again what did not change: B's reopen of
// a file nobody changed keeps the pages B's kernel cached (no read reaches
// B's daemon; A's late release may cost one more drop first); once A
// rewrote the file, B's next open drops them and reads the new bytes; a
// later one keeps those.
TEST_F(CephCoherenceTest, PagesSurviveReopenUntilAnotherMountWrites) {
  WriteVersion(OnA("f"), 1);
  bool held = false;
  EXPECT_GT(ReadsToDaemon(b_->mountpoint(), OnB("f"), 1, &held), 0u);
  ASSERT_TRUE(held);
  ExpectAReopenKeepsThePages(1);
  for (uint64_t v = 2; v <= 4; ++v) {
    WriteVersion(OnA("f"), v);
    EXPECT_GT(ReadsToDaemon(b_->mountpoint(), OnB("f"), v, &held), 0u)
        << "version " << v;
    EXPECT_TRUE(held) << "B read stale pages at its open after A's close, "
                      << "version " << v;
    ExpectAReopenKeepsThePages(v);
  }
  // A's truncate (size and change attribute) drops them as well.
  ASSERT_EQ(truncate(OnA("f").c_str(), 0), 0);
  int fd = open(OnA("f").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  std::vector<char> data(kFileSize);
  FillPattern(data.data(), data.size(), 9, 0);
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  ASSERT_EQ(close(fd), 0);
  EXPECT_GT(ReadsToDaemon(b_->mountpoint(), OnB("f"), 9, &held), 0u);
  EXPECT_TRUE(held) << "B kept pages across A's truncate and rewrite";
}

// B keeps the file open and its pages cached; A rewrites it and closes.
// Where B's client held the right to cache the file, Ceph revokes it when
// A opens the file for writing, and the daemon passes that on to B's
// kernel: B's next read through the same descriptor gets the new bytes,
// milliseconds later (libcephfs runs the callback on its own thread).
// Where B read while A still held the file (its release reaches Ceph just
// after close returns), B's client held no such right and nothing is
// revoked: B's kernel keeps its pages until its attribute timeout (1 s)
// shows the new mtime (docs/remote.md). So: every version within the
// timeout's bound, and the revocations reached B's kernel.
TEST_F(CephCoherenceTest, RevocationDropsTheOtherMountsCachedPages) {
  WriteVersion(OnA("f"), 100);
  int fd = open(OnB("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_TRUE(HoldsVersion(fd, 100));  // now in B's page cache
  double worst_ms = 0;
  int at_once = 0;
  constexpr int kVersions = 8;
  for (uint64_t v = 101; v <= 100 + kVersions; ++v) {
    WriteVersion(OnA("f"), v);
    auto start = std::chrono::steady_clock::now();
    bool fresh = HoldsVersion(fd, v);
    if (fresh) ++at_once;
    while (!fresh &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      fresh = HoldsVersion(fd, v);
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    worst_ms = std::max(worst_ms, ms);
    ASSERT_TRUE(fresh) << "B still reads stale pages of version " << v
                       << " after 3 s";
  }
  close(fd);
  const uint64_t delivered = InvalData(b_->mountpoint());
  fprintf(stderr,
          "B read %d of %d versions at once, the others within %.0f ms; %llu "
          "invalidations reached B's kernel\n",
          at_once, kVersions, worst_ms,
          static_cast<unsigned long long>(delivered));
  EXPECT_GT(delivered, 0u);
  // The size B's kernel caches follows too: A shrinks the file.
  ASSERT_EQ(truncate(OnA("f").c_str(), 4096), 0);
  auto start = std::chrono::steady_clock::now();
  struct stat st = {};
  while (stat(OnB("f").c_str(), &st) == 0 && st.st_size != 4096 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(st.st_size, 4096);
}

}  // namespace
}  // namespace fgds::testing
