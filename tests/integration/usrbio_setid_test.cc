// usrbio writes clear set-id bits as write(2) does (issue 12): a write by an
// unprivileged client clears S_ISUID, and S_ISGID where the group may
// execute; a privileged (root) client's write keeps them. Real users
// (test_users.h): alice owns the files, bob writes them; with POSIX writes
// and ring writes mixed on one file, each kind clears the bits.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/usrbio_harness.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kBlock = 4096;

class UsrbioSetIdTest : public UsrbioTwoUsersTest {
 protected:
  // The permission bits of the backing file (the truth, past any cache).
  mode_t BackingMode(const std::string& name) const {
    struct stat st;
    if (stat(Backing("shared/" + name).c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
  }

  // alice creates `name` holding 4 blocks of her pattern, then sets `mode`.
  void CreateAsAlice(const std::string& name, mode_t mode) {
    const std::string path = Shared(name);
    ASSERT_EQ(RunAsUser(alice_,
                        [&] {
                          int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0777);
                          if (fd < 0) return 1;
                          std::vector<char> data(4 * kBlock);
                          FillPattern(data.data(), data.size(), 1, 0);
                          if (write(fd, data.data(), data.size()) !=
                              static_cast<ssize_t>(data.size())) {
                            return 2;
                          }
                          if (fchmod(fd, mode) != 0) return 3;
                          return close(fd) == 0 ? 0 : 4;
                        }),
              0);
    ASSERT_EQ(BackingMode(name), mode);
  }

  // Writes block `block` of file `name` with pattern `seed` through a usrbio
  // ring, in the calling process. 0, or the step that failed.
  int RingWrite(const std::string& name, uint64_t block, uint64_t seed) {
    return RingWritePattern(fs_->mountpoint(), Shared(name), block * kBlock,
                            kBlock, seed);
  }
  // The same with write(2) through the mount.
  int PosixWrite(const std::string& name, uint64_t block, uint64_t seed) {
    const uint64_t offset = block * kBlock;
    int fd = open(Shared(name).c_str(), O_WRONLY);
    if (fd < 0) return 20;
    std::vector<char> data(kBlock);
    FillPattern(data.data(), kBlock, seed, offset);
    ssize_t n = pwrite(fd, data.data(), kBlock, static_cast<off_t>(offset));
    if (close(fd) != 0 || n != static_cast<ssize_t>(kBlock)) return 21;
    return 0;
  }
  // Whether block `block` of the backing file holds pattern `seed`.
  bool BackingBlockIs(const std::string& name, uint64_t block, uint64_t seed) {
    std::vector<char> data(kBlock);
    int fd = open(Backing("shared/" + name).c_str(), O_RDONLY);
    ssize_t n =
        pread(fd, data.data(), kBlock, static_cast<off_t>(block * kBlock));
    close(fd);
    return n == static_cast<ssize_t>(kBlock) &&
           MatchesPattern(data.data(), kBlock, seed, block * kBlock);
  }
};

TEST_F(UsrbioSetIdTest, UnprivilegedRingWriteClearsSetUidAndExecutableSetGid) {
  CreateAsAlice("f", 06777);
  ASSERT_EQ(RunAsUser(bob_, [&] { return RingWrite("f", 0, 2); }), 0);
  EXPECT_EQ(BackingMode("f"), 0777u) << std::oct << BackingMode("f");
  EXPECT_TRUE(BackingBlockIs("f", 0, 2)) << "bob's data";
  EXPECT_TRUE(BackingBlockIs("f", 1, 1)) << "alice's data";
}

TEST_F(UsrbioSetIdTest, SetGidWithoutGroupExecuteStays) {
  // Without group-execute, S_ISGID marks mandatory locking, not privilege:
  // write(2) keeps it.
  CreateAsAlice("g", 06767);
  ASSERT_EQ(RunAsUser(bob_, [&] { return RingWrite("g", 0, 2); }), 0);
  EXPECT_EQ(BackingMode("g"), 02767u) << std::oct << BackingMode("g");
}

TEST_F(UsrbioSetIdTest, PrivilegedRingWriteKeepsThem) {
  CreateAsAlice("f", 06777);
  ASSERT_EQ(RingWrite("f", 0, 3), 0);  // as root
  EXPECT_EQ(BackingMode("f"), 06777u) << std::oct << BackingMode("f");
  EXPECT_TRUE(BackingBlockIs("f", 0, 3));
}

TEST_F(UsrbioSetIdTest, MixedPosixAndRingWritesByBobEachClear) {
  CreateAsAlice("m", 06777);
  // write(2) through the mount: the kernel clears the bits.
  ASSERT_EQ(RunAsUser(bob_, [&] { return PosixWrite("m", 0, 4); }), 0);
  EXPECT_EQ(BackingMode("m"), 0777u) << std::oct << BackingMode("m");
  // alice sets them again (through the mount); bob's ring write clears them.
  ASSERT_EQ(
      RunAsUser(alice_, [&] { return chmod(Shared("m").c_str(), 06777); }), 0);
  ASSERT_EQ(BackingMode("m"), 06777u);
  ASSERT_EQ(RunAsUser(bob_, [&] { return RingWrite("m", 1, 5); }), 0);
  EXPECT_EQ(BackingMode("m"), 0777u) << std::oct << BackingMode("m");
  // Once more, both kinds from one process of bob's.
  ASSERT_EQ(
      RunAsUser(alice_, [&] { return chmod(Shared("m").c_str(), 06777); }), 0);
  ASSERT_EQ(RunAsUser(bob_,
                      [&] {
                        int err = RingWrite("m", 2, 6);
                        return err != 0 ? err : PosixWrite("m", 3, 7);
                      }),
            0);
  EXPECT_EQ(BackingMode("m"), 0777u) << std::oct << BackingMode("m");
  // Every block holds what its last writer wrote, in the backing file and
  // through the mount.
  const uint64_t seeds[] = {4, 5, 6, 7};
  std::vector<char> data(4 * kBlock);
  int fd = open(Shared("m").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pread(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  close(fd);
  for (uint64_t block = 0; block < 4; ++block) {
    EXPECT_TRUE(BackingBlockIs("m", block, seeds[block])) << block;
    EXPECT_TRUE(MatchesPattern(data.data() + block * kBlock, kBlock,
                               seeds[block], block * kBlock))
        << "mount, block " << block;
  }
}

}  // namespace
}  // namespace fgds::testing
