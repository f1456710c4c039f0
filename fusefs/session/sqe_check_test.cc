// Every validation rule of CheckSqe, one table row each.
#include "fusefs/session/sqe_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <vector>

#include "common/kmod/storage_device.h"
#include "fgds/usrbio.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

constexpr uint64_t kIovSize = 1 << 20;

// Turns a valid read into a valid fsync of the same file.
void MakeSync(fgds_sqe& s) {
  s.opcode = FGDS_OP_FSYNC;
  s.iov_id = 0;
  s.iov_offset = 0;
  s.file_offset = 0;
  s.len = 0;
}

class SqeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_ = aligned_alloc(4096, kIovSize);
    iov_id_ = static_cast<uint32_t>(
        registry_.AddIov(SharedMemory::Borrow(mem_, kIovSize)));
    // Descriptors -1: CheckSqe never touches them, only picks one.
    ro_ = static_cast<uint32_t>(registry_.AddFile(
        std::make_shared<RegisteredFile>(-1, -1, true, false)));
    wo_ = static_cast<uint32_t>(registry_.AddFile(
        std::make_shared<RegisteredFile>(-1, -1, false, true)));
    // Real descriptors (RegisteredFile closes them): /dev/null twice.
    buffered_fd_ = open("/dev/null", O_RDWR | O_CLOEXEC);
    direct_fd_ = open("/dev/null", O_RDWR | O_CLOEXEC);
    rw_ = static_cast<uint32_t>(
        registry_.AddFile(std::make_shared<RegisteredFile>(
            buffered_fd_, direct_fd_, true, true, /*node_in=*/0,
            kmod::StorageDevice(direct_fd_))));
  }
  void TearDown() override {
    registry_.Clear();
    free(mem_);
  }
  fgds_sqe Valid() const {
    fgds_sqe s = {};
    s.opcode = FGDS_OP_READ;
    s.iov_id = iov_id_;
    s.fd_id = rw_;
    s.len = 4096;
    s.userdata = 7;
    return s;
  }
  int Check(const fgds_sqe& sqe, uint32_t ring_flags = 0,
            CheckedIo* out = nullptr) {
    CheckedIo io;
    fgds::ReaderMutexLock lock(&registry_.mu());
    return CheckSqe(sqe, registry_, ring_flags, out ? out : &io);
  }

  Registry registry_;
  void* mem_ = nullptr;
  uint32_t iov_id_ = 0, ro_ = 0, wo_ = 0, rw_ = 0;
  int buffered_fd_ = -1, direct_fd_ = -1;
};

TEST_F(SqeCheckTest, EveryRuleRejectsItsCase) {
  struct Case {
    const char* name;
    std::function<void(fgds_sqe&)> mutate;
    int expected;
  };
  const uint64_t kMaxOff = static_cast<uint64_t>(INT64_MAX);
  const Case cases[] = {
      {"valid", [](fgds_sqe&) {}, 0},
      {"reserved0", [](fgds_sqe& s) { s.reserved0 = 1; }, -EINVAL},
      {"unknown flag", [](fgds_sqe& s) { s.flags = 0x80; }, -EINVAL},
      {"opcode 0", [](fgds_sqe& s) { s.opcode = 0; }, -EINVAL},
      {"opcode 4", [](fgds_sqe& s) { s.opcode = 4; }, -EINVAL},
      {"datasync flag on a read",
       [](fgds_sqe& s) { s.flags = FGDS_SQE_DATASYNC; }, -EINVAL},
      {"fsync", [](fgds_sqe& s) { MakeSync(s); }, 0},
      {"fdatasync of a read-only file",
       [this](fgds_sqe& s) {
         MakeSync(s);
         s.flags = FGDS_SQE_DATASYNC;
         s.fd_id = ro_;
       },
       0},
      {"fsync with a length",
       [](fgds_sqe& s) {
         MakeSync(s);
         s.len = 4096;
       },
       -EINVAL},
      {"fsync with a file offset",
       [](fgds_sqe& s) {
         MakeSync(s);
         s.file_offset = 4096;
       },
       -EINVAL},
      {"fsync naming an iov",
       [](fgds_sqe& s) {
         MakeSync(s);
         s.iov_id = 1;
       },
       -EINVAL},
      {"fsync with the buffered flag",
       [](fgds_sqe& s) {
         MakeSync(s);
         s.flags = FGDS_SQE_BUFFERED;
       },
       -EINVAL},
      {"fsync of an unknown fd",
       [](fgds_sqe& s) {
         MakeSync(s);
         s.fd_id = 999;
       },
       -EBADF},
      {"zero length", [](fgds_sqe& s) { s.len = 0; }, -EINVAL},
      {"length over limit", [](fgds_sqe& s) { s.len = kMaxSqeLen + 1; },
       -EINVAL},
      {"unknown iov", [](fgds_sqe& s) { s.iov_id = 999; }, -EINVAL},
      {"iov offset past end", [](fgds_sqe& s) { s.iov_offset = kIovSize + 1; },
       -EINVAL},
      {"range past iov end",
       [](fgds_sqe& s) { s.iov_offset = kIovSize - 4095; }, -EINVAL},
      {"range ending at iov end",
       [](fgds_sqe& s) { s.iov_offset = kIovSize - 4096; }, 0},
      {"iov offset wraps", [](fgds_sqe& s) { s.iov_offset = UINT64_MAX - 100; },
       -EINVAL},
      {"file offset wraps",
       [](fgds_sqe& s) { s.file_offset = UINT64_MAX - 100; }, -EINVAL},
      {"file range past off_t",
       [kMaxOff](fgds_sqe& s) { s.file_offset = kMaxOff - 4095; }, -EINVAL},
      {"file range ending at off_t max",
       [kMaxOff](fgds_sqe& s) { s.file_offset = kMaxOff - 4096; }, 0},
      {"unknown fd", [](fgds_sqe& s) { s.fd_id = 999; }, -EBADF},
      {"read from write-only", [this](fgds_sqe& s) { s.fd_id = wo_; }, -EACCES},
      {"write to read-only",
       [this](fgds_sqe& s) {
         s.fd_id = ro_;
         s.opcode = FGDS_OP_WRITE;
       },
       -EACCES},
      {"write to write-only",
       [this](fgds_sqe& s) {
         s.fd_id = wo_;
         s.opcode = FGDS_OP_WRITE;
       },
       0},
  };
  for (const Case& c : cases) {
    fgds_sqe sqe = Valid();
    c.mutate(sqe);
    EXPECT_EQ(Check(sqe), c.expected) << c.name;
  }
}

TEST_F(SqeCheckTest, UnregisteredIovAndFileAreRejected) {
  fgds_sqe sqe = Valid();
  ASSERT_EQ(registry_.RemoveIov(iov_id_), 0);
  EXPECT_EQ(Check(sqe), -EINVAL);
  EXPECT_EQ(registry_.RemoveIov(iov_id_), -ENOENT);
  // Ids are never reused: a new iov does not answer to the old id.
  ASSERT_NE(registry_.AddIov(SharedMemory::Borrow(mem_, kIovSize)), iov_id_);
  EXPECT_EQ(Check(sqe), -EINVAL);
  ASSERT_EQ(registry_.RemoveFile(rw_), 0);
  sqe.iov_id = iov_id_ + 1;
  EXPECT_EQ(Check(sqe), -EBADF);
}

TEST_F(SqeCheckTest, AlignedEntriesGoDirectOthersBuffered) {
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.iov_offset = 8192;
  sqe.file_offset = 4096;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);
  EXPECT_EQ(io.fd, direct_fd_);
  EXPECT_EQ(io.buf, static_cast<char*>(mem_) + 8192);
  EXPECT_TRUE(io.iov != nullptr && io.file != nullptr);  // kept alive

  struct Case {
    const char* name;
    uint64_t iov_offset, file_offset, len;
    uint8_t flags;
    uint32_t ring_flags;
  } buffered[] = {
      {"unaligned buffer", 100, 4096, 4096, 0, 0},
      {"unaligned offset", 4096, 100, 4096, 0, 0},
      {"unaligned length", 4096, 4096, 100, 0, 0},
      {"entry asks for the page cache", 4096, 4096, 4096, FGDS_SQE_BUFFERED, 0},
      {"ring asks for the page cache", 4096, 4096, 4096, 0, FGDS_IOR_BUFFERED},
  };
  for (const Case& c : buffered) {
    sqe = Valid();
    sqe.iov_offset = c.iov_offset;
    sqe.file_offset = c.file_offset;
    sqe.len = c.len;
    sqe.flags = c.flags;
    ASSERT_EQ(Check(sqe, c.ring_flags, &io), 0) << c.name;
    EXPECT_EQ(io.path, FGDS_PATH_PAGE_CACHE) << c.name;
    EXPECT_EQ(io.fd, buffered_fd_) << c.name;
  }
}

TEST_F(SqeCheckTest, NoDirectDescriptorMeansPageCache) {
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.fd_id = ro_;  // registered without an O_DIRECT descriptor
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_PAGE_CACHE);
}

TEST_F(SqeCheckTest, LargeReadOfCachedPagesUsesThePageCache) {
  // A file whose pages were just written is in the page cache: a large
  // aligned read of it is served from there, a small one stays O_DIRECT
  // (the question costs a syscall), and writes are never diverted.
  char path[] = "/tmp/fgds-sqe-cache-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  std::vector<char> data(kCachedReadCheckMin * 2, 'x');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  const int direct = open("/dev/null", O_RDWR | O_CLOEXEC);
  const uint32_t id = static_cast<uint32_t>(registry_.AddFile(
      std::make_shared<RegisteredFile>(fd, direct, true, true)));
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.fd_id = id;
  sqe.len = kCachedReadCheckMin;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_PAGE_CACHE);
  EXPECT_EQ(io.fd, fd);

  sqe.len = kCachedReadCheckMin - 4096;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);

  sqe.len = kCachedReadCheckMin;
  sqe.opcode = FGDS_OP_WRITE;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);

  // Past the end of the file nothing is cached: O_DIRECT (it reads 0).
  sqe.opcode = FGDS_OP_READ;
  sqe.file_offset = kCachedReadCheckMin * 4;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);

  // GPU memory (a direct_only iov) never takes the page cache: the CPU
  // would copy into GPU memory.
  auto keeper = std::make_shared<int>(0);
  sqe.iov_id = static_cast<uint32_t>(registry_.AddIov(
      SharedMemory::Adopt(static_cast<char*>(mem_), kIovSize, keeper)));
  sqe.file_offset = 0;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);
}

TEST_F(SqeCheckTest, GpuIovsTakeOnlyDirectEntries) {
  // A direct_only iov (GPU memory mapped through the module): host memory
  // here, kept by a keeper as the module mapping would be.
  auto keeper = std::make_shared<int>(0);
  const uint32_t gpu = static_cast<uint32_t>(registry_.AddIov(
      SharedMemory::Adopt(static_cast<char*>(mem_), kIovSize, keeper)));
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.iov_id = gpu;
  sqe.iov_offset = 8192;
  sqe.file_offset = 4096;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.path, FGDS_PATH_DIRECT);
  EXPECT_EQ(io.fd, direct_fd_);
  EXPECT_EQ(io.buf, static_cast<char*>(mem_) + 8192);

  struct Case {
    const char* name;
    uint64_t iov_offset, file_offset, len;
    uint8_t flags;
    uint32_t ring_flags;
    int error;
  } refused[] = {
      {"unaligned buffer", 100, 4096, 4096, 0, 0, -EINVAL},
      {"unaligned offset", 4096, 100, 4096, 0, 0, -EINVAL},
      {"unaligned length", 4096, 4096, 100, 0, 0, -EINVAL},
      {"entry asks for the page cache", 4096, 4096, 4096, FGDS_SQE_BUFFERED, 0,
       -EINVAL},
      {"ring asks for the page cache", 4096, 4096, 4096, 0, FGDS_IOR_BUFFERED,
       -EINVAL},
  };
  for (const Case& c : refused) {
    sqe = Valid();
    sqe.iov_id = gpu;
    sqe.iov_offset = c.iov_offset;
    sqe.file_offset = c.file_offset;
    sqe.len = c.len;
    sqe.flags = c.flags;
    EXPECT_EQ(Check(sqe, c.ring_flags, &io), c.error) << c.name;
  }
  sqe = Valid();
  sqe.iov_id = gpu;
  sqe.fd_id = ro_;  // no O_DIRECT descriptor: the page cache is no option
  EXPECT_EQ(Check(sqe, 0, &io), -EOPNOTSUPP);

  // Mapped for one storage device: files on it pass, others get -EXDEV
  // (the module checked the P2P route to that device only).
  const uint32_t same = static_cast<uint32_t>(registry_.AddIov(
      SharedMemory::Adopt(static_cast<char*>(mem_), kIovSize, keeper,
                          kmod::StorageDevice(direct_fd_))));
  const uint32_t other = static_cast<uint32_t>(registry_.AddIov(
      SharedMemory::Adopt(static_cast<char*>(mem_), kIovSize, keeper,
                          kmod::StorageDevice(direct_fd_) + 1)));
  sqe = Valid();
  sqe.iov_id = same;
  EXPECT_EQ(Check(sqe, 0, &io), 0);
  sqe.iov_id = other;
  EXPECT_EQ(Check(sqe, 0, &io), -EXDEV);
  ASSERT_EQ(registry_.RemoveIov(same), 0);
  ASSERT_EQ(registry_.RemoveIov(other), 0);
  // The registry's reference keeps the keeper alive until removal.
  EXPECT_EQ(keeper.use_count(), 2);
  ASSERT_EQ(registry_.RemoveIov(gpu), 0);
  EXPECT_EQ(keeper.use_count(), 1);
}

}  // namespace
}  // namespace fgds::session
