// Every validation rule of CheckSqe, one table row each.
#include "fusefs/session/sqe_check.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <vector>

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

// Stand-ins for backend handles: CheckSqe never dereferences them, and a
// RegisteredFile without a backend releases nothing.
backend::File* FakeFile(uintptr_t n) {
  return reinterpret_cast<backend::File*>(n * 64);
}

class SqeCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_ = aligned_alloc(4096, kIovSize);
    iov_id_ = static_cast<uint32_t>(
        registry_.AddIov(SharedMemory::Borrow(mem_, kIovSize)));
    ro_ = static_cast<uint32_t>(registry_.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(1), true, false)));
    wo_ = static_cast<uint32_t>(registry_.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(2), false, true)));
    rw_ = static_cast<uint32_t>(registry_.AddFile(
        std::make_shared<RegisteredFile>(nullptr, FakeFile(3), true, true)));
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

// How the bytes move is the backend's choice (backend/local/io_policy.h):
// the check only resolves the entry and passes the client's preference.
TEST_F(SqeCheckTest, ResolvesTheRequestAndThePathPreference) {
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.iov_offset = 8192;
  sqe.file_offset = 4096;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_FALSE(io.write);
  EXPECT_EQ(io.file, FakeFile(3));
  EXPECT_EQ(io.buf, static_cast<char*>(mem_) + 8192);
  EXPECT_EQ(io.len, 4096u);
  EXPECT_EQ(io.offset, 4096u);
  EXPECT_EQ(io.flags, backend::kIoPreferDirect);
  ASSERT_TRUE(io.iov != nullptr && io.registered != nullptr);  // kept alive
  EXPECT_EQ(io.region, io.iov->get());
  EXPECT_EQ(io.region->kind(), backend::MemoryRegion::Kind::kHost);

  sqe.flags = FGDS_SQE_BUFFERED;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.flags, 0u);
  sqe.flags = 0;
  ASSERT_EQ(Check(sqe, FGDS_IOR_BUFFERED, &io), 0);
  EXPECT_EQ(io.flags, 0u);

  sqe = Valid();
  MakeSync(sqe);
  sqe.flags = FGDS_SQE_DATASYNC;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_TRUE(io.sync && io.datasync);
  EXPECT_EQ(io.file, FakeFile(3));
}

TEST_F(SqeCheckTest, UnprivilegedWritersKillPrivileges) {
  // A file an unprivileged client registered: its writes clear set-id bits
  // (as its write(2) would); its reads, and a root client's writes, do not.
  const uint32_t user_rw =
      static_cast<uint32_t>(registry_.AddFile(std::make_shared<RegisteredFile>(
          nullptr, FakeFile(4), true, true, 0, /*unprivileged_writer=*/true)));
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.fd_id = user_rw;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.flags & backend::kIoKillPrivileges, 0u) << "read";
  sqe.opcode = FGDS_OP_WRITE;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_NE(io.flags & backend::kIoKillPrivileges, 0u) << "user's write";
  sqe.fd_id = rw_;
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.flags & backend::kIoKillPrivileges, 0u) << "root's write";
}

TEST_F(SqeCheckTest, GpuIovsAreDeviceRegions) {
  // A direct_only iov (GPU memory mapped through the module): host memory
  // here, kept by a keeper as the module mapping would be.
  auto keeper = std::make_shared<int>(0);
  const uint32_t gpu =
      static_cast<uint32_t>(registry_.AddIov(SharedMemory::Adopt(
          static_cast<char*>(mem_), kIovSize, keeper, makedev(259, 1))));
  CheckedIo io;
  fgds_sqe sqe = Valid();
  sqe.iov_id = gpu;
  sqe.iov_offset = 100;  // unaligned: the backend refuses it, not the check
  ASSERT_EQ(Check(sqe, 0, &io), 0);
  EXPECT_EQ(io.region->kind(), backend::MemoryRegion::Kind::kDevice);
  EXPECT_EQ(io.region->route_device(), makedev(259, 1));
  // The registry's reference keeps the keeper alive until removal.
  EXPECT_EQ(keeper.use_count(), 2);
  ASSERT_EQ(registry_.RemoveIov(gpu), 0);
  EXPECT_EQ(keeper.use_count(), 1);
}

}  // namespace
}  // namespace fgds::session
