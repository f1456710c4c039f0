// Every rule of ChooseIo, one case each.
#include "backend/local/io_policy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "common/page_cache.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

constexpr int kFd = 10;
constexpr int kDirectFd = 11;
constexpr dev_t kDevice = 42;

bool NeverCached(int, uint64_t, uint64_t) { return false; }
bool AlwaysCached(int, uint64_t, uint64_t) { return true; }

class IoPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_ = static_cast<char*>(aligned_alloc(4096, 1 << 20));
  }
  void TearDown() override { free(mem_); }

  FileIoRequest Request(FileOp op, uint64_t mem_offset, uint64_t offset,
                        uint64_t len, uint32_t flags = kIoPreferDirect,
                        const MemoryRegion* region = nullptr) const {
    return FileIoRequest{op,  nullptr, region, mem_ + mem_offset,
                         len, offset,  flags,  nullptr};
  }

  char* mem_ = nullptr;
  const FileDescriptors file_{kFd, kDirectFd, kDevice};
};

TEST_F(IoPolicyTest, AlignedPreferDirectGoesDirectOthersThroughTheCache) {
  IoChoice c =
      ChooseIo(Request(FileOp::kRead, 8192, 4096, 4096), file_, &NeverCached);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.path, IoPath::kDirect);
  EXPECT_EQ(c.fd, kDirectFd);

  struct Case {
    const char* name;
    uint64_t mem_offset, offset, len;
    uint32_t flags;
  } cached[] = {
      {"unaligned memory", 100, 4096, 4096, kIoPreferDirect},
      {"unaligned offset", 4096, 100, 4096, kIoPreferDirect},
      {"unaligned length", 4096, 4096, 100, kIoPreferDirect},
      {"caller prefers the page cache", 4096, 4096, 4096, 0},
  };
  for (const Case& k : cached) {
    for (FileOp op : {FileOp::kRead, FileOp::kWrite}) {
      c = ChooseIo(Request(op, k.mem_offset, k.offset, k.len, k.flags), file_,
                   &NeverCached);
      EXPECT_EQ(c.error, 0) << k.name;
      EXPECT_EQ(c.path, IoPath::kPageCache) << k.name;
      EXPECT_EQ(c.fd, kFd) << k.name;
    }
  }
}

TEST_F(IoPolicyTest, NoTwinMeansPageCache) {
  const FileDescriptors no_twin{kFd, -1, kDevice};
  IoChoice c =
      ChooseIo(Request(FileOp::kWrite, 0, 0, 4096), no_twin, &NeverCached);
  EXPECT_EQ(c.path, IoPath::kPageCache);
  EXPECT_EQ(c.fd, kFd);
}

TEST_F(IoPolicyTest, SyncsUseTheMainDescriptor) {
  for (FileOp op : {FileOp::kFsync, FileOp::kFdatasync}) {
    IoChoice c = ChooseIo(Request(op, 0, 0, 0), file_, &NeverCached);
    EXPECT_EQ(c.error, 0);
    EXPECT_EQ(c.path, IoPath::kNone);
    EXPECT_EQ(c.fd, kFd);
  }
}

TEST_F(IoPolicyTest, LargeReadsOfCachedPagesUseThePageCache) {
  IoChoice c = ChooseIo(Request(FileOp::kRead, 0, 0, kCachedReadCheckMin),
                        file_, &AlwaysCached);
  EXPECT_EQ(c.path, IoPath::kPageCache);
  // Small reads skip the question; writes are never diverted.
  c = ChooseIo(Request(FileOp::kRead, 0, 0, kCachedReadCheckMin - 4096), file_,
               &AlwaysCached);
  EXPECT_EQ(c.path, IoPath::kDirect);
  c = ChooseIo(Request(FileOp::kWrite, 0, 0, kCachedReadCheckMin), file_,
               &AlwaysCached);
  EXPECT_EQ(c.path, IoPath::kDirect);
  c = ChooseIo(Request(FileOp::kRead, 0, 0, kCachedReadCheckMin), file_,
               &NeverCached);
  EXPECT_EQ(c.path, IoPath::kDirect);
}

// The real page-cache query, on a file whose pages were just written.
TEST_F(IoPolicyTest, RealPageCacheQuery) {
  char path[] = "/tmp/fgds-policy-cache-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  std::vector<char> data(kCachedReadCheckMin * 2, 'x');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  const FileDescriptors file{fd, kDirectFd, kDevice};
  IoChoice c = ChooseIo(Request(FileOp::kRead, 0, 0, kCachedReadCheckMin), file,
                        &FullyCached);
  EXPECT_EQ(c.path, IoPath::kPageCache);
  // Past the end of the file nothing is cached: O_DIRECT (it reads 0).
  c = ChooseIo(
      Request(FileOp::kRead, 0, kCachedReadCheckMin * 4, kCachedReadCheckMin),
      file, &FullyCached);
  EXPECT_EQ(c.path, IoPath::kDirect);
  close(fd);
}

TEST_F(IoPolicyTest, DeviceMemoryTakesOnlyTheDirectPath) {
  MemoryRegion gpu(mem_, 1 << 20, MemoryRegion::Kind::kDevice, kDevice);
  IoChoice c = ChooseIo(Request(FileOp::kRead, 8192, 4096, kCachedReadCheckMin,
                                kIoPreferDirect, &gpu),
                        file_, &AlwaysCached);
  // Even fully cached pages: the CPU must not copy into GPU memory.
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.path, IoPath::kDirect);
  EXPECT_EQ(c.fd, kDirectFd);

  struct Case {
    const char* name;
    uint64_t mem_offset, offset, len;
    uint32_t flags;
  } refused[] = {
      {"unaligned memory", 100, 4096, 4096, kIoPreferDirect},
      {"unaligned offset", 4096, 100, 4096, kIoPreferDirect},
      {"unaligned length", 4096, 4096, 100, kIoPreferDirect},
      {"caller asks for the page cache", 4096, 4096, 4096, 0},
  };
  for (const Case& k : refused) {
    c = ChooseIo(
        Request(FileOp::kWrite, k.mem_offset, k.offset, k.len, k.flags, &gpu),
        file_, &NeverCached);
    EXPECT_EQ(c.error, -EINVAL) << k.name;
    EXPECT_EQ(c.path, IoPath::kNone) << k.name;
  }
  // No O_DIRECT twin (tmpfs): the page cache is no option.
  const FileDescriptors no_twin{kFd, -1, kDevice};
  c = ChooseIo(Request(FileOp::kRead, 0, 0, 4096, kIoPreferDirect, &gpu),
               no_twin, &NeverCached);
  EXPECT_EQ(c.error, -EOPNOTSUPP);

  // Mapped for one storage device: files elsewhere get -EXDEV (the module
  // checked the P2P route to that device only); 0 means not checked.
  const FileDescriptors elsewhere{kFd, kDirectFd, kDevice + 1};
  c = ChooseIo(Request(FileOp::kRead, 0, 0, 4096, kIoPreferDirect, &gpu),
               elsewhere, &NeverCached);
  EXPECT_EQ(c.error, -EXDEV);
  MemoryRegion unchecked(mem_, 1 << 20, MemoryRegion::Kind::kDevice, 0);
  c = ChooseIo(Request(FileOp::kRead, 0, 0, 4096, kIoPreferDirect, &unchecked),
               elsewhere, &NeverCached);
  EXPECT_EQ(c.error, 0);
}

TEST_F(IoPolicyTest, HostRegionsFollowTheHostRules) {
  MemoryRegion host(mem_, 1 << 20, MemoryRegion::Kind::kHost, 0);
  IoChoice c =
      ChooseIo(Request(FileOp::kRead, 100, 0, 4096, kIoPreferDirect, &host),
               file_, &NeverCached);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.path, IoPath::kPageCache);
}

}  // namespace
}  // namespace fgds::backend
