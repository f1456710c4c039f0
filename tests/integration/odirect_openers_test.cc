// Data the kernel accepted must reach the backing file in every mix of
// openers. Regression (issue 11): the daemon opened its backing descriptor
// with the caller's O_DIRECT, and the kernel writes a file's dirty pages
// back through any writable handle of it, so while one process merely held
// the file open with O_DIRECT, another's partial-page flush (a buffered
// write + fsync under the writeback cache, an mmap store + msync) went
// through that descriptor and failed with EINVAL: fsync/msync returned
// EINVAL and the bytes never reached the backing file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lib/mount_features.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

std::string Err() { return std::strerror(errno); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Mode {
  const char* name;
  std::vector<std::string> args;
};
void PrintTo(const Mode& mode, std::ostream* os) { *os << mode.name; }

class ODirectOpenersTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    MountOptions options;
    options.extra_args = GetParam().args;
    auto fs = MountedFs::Start(options);
    if (absl::IsFailedPrecondition(fs.status())) GTEST_SKIP() << fs.status();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = std::move(*fs);
  }
  std::string M(const std::string& name) const {
    return fs_->mountpoint() + "/" + name;
  }
  std::string B(const std::string& name) const {
    return fs_->backing() + "/" + name;
  }
  std::unique_ptr<MountedFs> fs_;
};

// Process A writes 100 bytes buffered and fsyncs while process B holds the
// file open with O_DIRECT (opened after A, so its handle is the one the
// kernel picks for writeback).
TEST_P(ODirectOpenersTest, PartialWriteAndFsyncWhileAnotherHoldsODirect) {
  const std::string path = M("partial");
  int a = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(a, 0) << Err();
  int b = open(path.c_str(), O_RDWR | O_DIRECT);
  ASSERT_GE(b, 0) << "open O_DIRECT through the mount: " << Err();
  const std::string data(100, 'a');
  ASSERT_EQ(pwrite(a, data.data(), data.size(), 0), 100) << Err();
  EXPECT_EQ(fsync(a), 0) << "fsync: " << Err();
  EXPECT_EQ(close(a), 0) << Err();
  EXPECT_EQ(close(b), 0) << Err();
  EXPECT_EQ(ReadAll(B("partial")), data) << "backing file";
  EXPECT_EQ(ReadAll(path), data) << "through the mount";
}

TEST_P(ODirectOpenersTest, MmapStoreAndMsyncWhileAnotherHoldsODirect) {
  if (GetParam().name == std::string("direct_io")) {
    GTEST_SKIP() << "--direct-io refuses shared writable mappings";
  }
  const std::string path = M("mapped");
  int a = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(a, 0) << Err();
  ASSERT_EQ(ftruncate(a, 5000), 0) << Err();  // a partial last page
  int b = open(path.c_str(), O_RDWR | O_DIRECT);
  ASSERT_GE(b, 0) << Err();
  void* map = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
  ASSERT_NE(map, MAP_FAILED) << Err();
  std::string expected(5000, '\0');
  for (size_t i = 0; i < expected.size(); i += 7) {
    static_cast<char*>(map)[i] = 'm';
    expected[i] = 'm';
  }
  EXPECT_EQ(msync(map, 8192, MS_SYNC), 0) << "msync: " << Err();
  EXPECT_EQ(munmap(map, 8192), 0);
  EXPECT_EQ(fsync(a), 0) << "fsync: " << Err();
  close(a);
  close(b);
  EXPECT_EQ(ReadAll(B("mapped")), expected) << "backing file";
  EXPECT_EQ(ReadAll(path), expected) << "through the mount";
}

// The O_DIRECT opener's own I/O works, aligned and not, and every reader
// sees it.
TEST_P(ODirectOpenersTest, ODirectOpenerReadsAndWrites) {
  const std::string path = M("direct");
  int b = open(path.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
  ASSERT_GE(b, 0) << Err();
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 8192), 0);
  memset(mem, 'd', 8192);
  ASSERT_EQ(pwrite(b, mem, 8192, 0), 8192) << Err();
  // FUSE passes unaligned O_DIRECT requests on; they must work too. In
  // passthrough the backing file takes them, and answers as it does
  // natively (ext4: EINVAL).
  std::string tail = "tail";
  if (PassthroughOn(fs_->mountpoint())) {
    int native =
        open(B("native-direct").c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    ASSERT_GE(native, 0) << Err();
    errno = 0;
    const ssize_t want = pwrite(native, "tail", 4, 8192);
    const int want_errno = errno;
    close(native);
    unlink(B("native-direct").c_str());
    errno = 0;
    ASSERT_EQ(pwrite(b, "tail", 4, 8192), want) << Err();
    ASSERT_EQ(errno, want_errno);
    if (want != 4) tail.clear();
  } else {
    ASSERT_EQ(pwrite(b, "tail", 4, 8192), 4) << Err();
  }
  memset(mem, 0, 8192);
  ASSERT_EQ(pread(b, mem, 8192, 0), 8192) << Err();
  EXPECT_EQ(std::string(static_cast<char*>(mem), 8192), std::string(8192, 'd'));
  EXPECT_EQ(fsync(b), 0) << Err();
  close(b);
  free(mem);
  EXPECT_EQ(ReadAll(B("direct")), std::string(8192, 'd') + tail);
  EXPECT_EQ(ReadAll(path), std::string(8192, 'd') + tail);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ODirectOpenersTest,
    ::testing::Values(Mode{"default", {}},
                      Mode{"writeback", {"--writeback-cache"}},
                      Mode{"no_keep_cache", {"--no-keep-cache"}},
                      Mode{"direct_io", {"--direct-io"}}),
    [](const ::testing::TestParamInfo<Mode>& p) { return p.param.name; });

}  // namespace
}  // namespace fgds::testing
