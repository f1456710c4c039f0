// File capabilities (the security.capability xattr) through a ceph mount:
// they go wherever Linux drops them (a write by anyone, a truncate, an
// O_TRUNC open, a chown), also where no kernel of this mount sees the
// change: a usrbio write, and a write or truncate while the kernel holds
// the inode S_NOSEC (FUSE_HANDLE_KILLPRIV_V2 marks the superblock SB_NOSEC;
// after a first write the kernel stops asking for the xattr until the
// inode's attributes refresh) and another client set a capability
// meanwhile. A real unprivileged user (fgds-bob, test_users.h) writes
// through a mount that keeps attributes a minute; root sets the capability
// through a second client and checks through both and a fresh third one.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/file_contents.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

constexpr char kCapName[] = "security.capability";
constexpr uint64_t kBlock = 4096;

// A valid struct vfs_cap_data, revision 2 (20 bytes, little endian):
// effective, permitted CAP_NET_BIND_SERVICE (bit 10). The kernel checks the
// format before passing it on.
std::vector<char> CapValue() {
  const uint32_t words[5] = {0x02000001u, 1u << 10, 0, 0, 0};
  std::vector<char> value(sizeof(words));
  std::memcpy(value.data(), words, sizeof(words));
  return value;
}

// 1: `path` has a capability, 0: none (ENODATA), -errno otherwise.
int HasCap(const std::string& path) {
  ssize_t n = getxattr(path.c_str(), kCapName, nullptr, 0);
  if (n >= 0) return 1;
  return errno == ENODATA ? 0 : -errno;
}

// Runs `first` as `user` in a forked child, then `between` here while the
// child waits (its descriptors and the kernel's state of the file kept),
// then `second` in the child. The child's exit status: the first step
// that failed (its return value), 126 if it could not become `user`.
int InTwoSteps(const TestUser& user, const std::function<int()>& first,
               const std::function<void()>& between,
               const std::function<int()>& second) {
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return -errno;
  pid_t pid = fork();
  if (pid < 0) return -errno;
  char c = 0;
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    if (BecomeUser(user) != 0) _exit(126);
    int res = first();
    if (write(ready[1], &c, 1) != 1 || res != 0) _exit(res != 0 ? res : 125);
    if (read(go[0], &c, 1) != 1) _exit(124);
    _exit(second());
  }
  close(ready[1]);
  close(go[0]);
  const bool ready_ok = read(ready[0], &c, 1) == 1;
  if (ready_ok) between();
  (void)!write(go[1], &c, 1);
  close(ready[0]);
  close(go[1]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -errno;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class CephCapabilityTest : public CephTest {
 protected:
  void SetUp() override {
    CephTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    bob_ = *bob;
    ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
    const std::string parent =
        fs_->mountpoint().substr(0, fs_->mountpoint().rfind('/'));
    ASSERT_EQ(chmod(parent.c_str(), 0755), 0);
    // Bob's mount keeps attributes and names a minute: its kernel keeps
    // the inode S_NOSEC once it has seen no capability.
    auto slow = StartMount({"--attr-timeout", "60", "--entry-timeout", "60"});
    ASSERT_TRUE(slow.ok()) << slow.status();
    slow_ = *std::move(slow);
    ASSERT_EQ(chmod(SlowParent().c_str(), 0755), 0);
  }

  absl::StatusOr<std::unique_ptr<MountedFs>> StartMount(
      const std::vector<std::string>& extra) {
    MountOptions options;
    options.extra_args = {"--backend",        "ceph",        "--ceph-conf",
                          ceph_cluster->conf, "--ceph-root", "/" + name_};
    options.extra_args.insert(options.extra_args.end(), extra.begin(),
                              extra.end());
    options.timeout_ms = 40000;
    return MountedFs::Start(options);
  }
  std::string SlowParent() const {
    return slow_->mountpoint().substr(0, slow_->mountpoint().rfind('/'));
  }
  // `name` through bob's mount, and through root's (the second client).
  std::string Slow(const std::string& name) const {
    return slow_->mountpoint() + "/" + name;
  }
  std::string Other(const std::string& name) const { return dir_ + "/" + name; }

  // Root makes `name` (mode `mode`, 8 KiB of data) through the second
  // client.
  void Create(const std::string& name, mode_t mode) {
    int fd = open(Other(name).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    std::vector<char> data(2 * kBlock, 'r');
    ASSERT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    ASSERT_EQ(fchmod(fd, mode), 0);
    ASSERT_EQ(close(fd), 0);
  }
  // Root sets a capability on `name` through the second client.
  void SetCap(const std::string& name) {
    const std::vector<char> value = CapValue();
    ASSERT_EQ(
        setxattr(Other(name).c_str(), kCapName, value.data(), value.size(), 0),
        0)
        << strerror(errno);
    ASSERT_EQ(HasCap(Other(name)), 1);
  }
  // The capability of `name` is gone, as seen by bob's mount, the second
  // client and a fresh third one, whose stat of the file (no kernel cache
  // yet) it returns in `st`.
  void ExpectCapGone(const std::string& name, struct stat* st = nullptr) {
    EXPECT_EQ(HasCap(Slow(name)), 0) << "through bob's mount";
    EXPECT_EQ(HasCap(Other(name)), 0) << "through the second client";
    auto fresh = StartMount({});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    const std::string path = (*fresh)->mountpoint() + "/" + name;
    EXPECT_EQ(HasCap(path), 0) << "through a fresh client";
    if (st != nullptr) {
      ASSERT_EQ(stat(path.c_str(), st), 0);
    }
  }

  // Bob's first step: opens `name` through his mount for writing (in
  // `*fd`) and writes its first block, after which his kernel holds the
  // inode S_NOSEC. 0 or the step that failed.
  int OpenAndWriteFirstBlock(const std::string& name, int* fd) const {
    *fd = open(Slow(name).c_str(), O_WRONLY);
    if (*fd < 0) return 1;
    const std::vector<char> data(kBlock, 'b');
    return pwrite(*fd, data.data(), kBlock, 0) == static_cast<ssize_t>(kBlock)
               ? 0
               : 2;
  }

  TestUser bob_;
  std::unique_ptr<MountedFs> slow_;
};

// A small POSIX write after bob's first one (the kernel holds the inode
// S_NOSEC): the kernel does not look for the capability another client set
// in between; the daemon drops it.
TEST_F(CephCapabilityTest, WriteByAnotherUserDropsIt) {
  Create("w", 0666);
  int fd = -1;
  const std::vector<char> data(kBlock, 'b');
  EXPECT_EQ(InTwoSteps(
                bob_, [&] { return OpenAndWriteFirstBlock("w", &fd); },
                [&] { SetCap("w"); },
                [&] {
                  if (pwrite(fd, data.data(), kBlock, kBlock) !=
                      static_cast<ssize_t>(kBlock)) {
                    return 3;
                  }
                  return close(fd) == 0 ? 0 : 4;
                }),
            0);
  ExpectCapGone("w");
}

TEST_F(CephCapabilityTest, TruncateByAnotherUserDropsIt) {
  Create("t", 0666);
  int fd = -1;
  EXPECT_EQ(InTwoSteps(
                bob_, [&] { return OpenAndWriteFirstBlock("t", &fd); },
                [&] { SetCap("t"); },
                [&] {
                  if (ftruncate(fd, 100) != 0) return 3;
                  return close(fd) == 0 ? 0 : 4;
                }),
            0);
  struct stat st = {};
  ExpectCapGone("t", &st);
  EXPECT_EQ(st.st_size, 100);
}

TEST_F(CephCapabilityTest, OTruncOpenByAnotherUserDropsIt) {
  Create("o", 0666);
  int fd = -1;
  EXPECT_EQ(InTwoSteps(
                bob_, [&] { return OpenAndWriteFirstBlock("o", &fd); },
                [&] { SetCap("o"); },
                [&] {
                  int again = open(Slow("o").c_str(), O_WRONLY | O_TRUNC);
                  if (again < 0) return 3;
                  if (close(again) != 0) return 4;
                  return close(fd) == 0 ? 0 : 5;
                }),
            0);
  struct stat st = {};
  ExpectCapGone("o", &st);
  EXPECT_EQ(st.st_size, 0);
}

TEST_F(CephCapabilityTest, ChownByRootDropsIt) {
  Create("c", 0755);
  // Root's own first write through bob's mount: the kernel holds the inode
  // S_NOSEC.
  int fd = open(Slow("c").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "x", 1, 0), 1);
  ASSERT_EQ(close(fd), 0);
  SetCap("c");
  ASSERT_EQ(chown(Slow("c").c_str(), bob_.uid, bob_.gid), 0) << strerror(errno);
  struct stat st = {};
  ExpectCapGone("c", &st);
  EXPECT_EQ(st.st_uid, bob_.uid);
}

// The owner's chgrp of a file nobody may write: the kernel removes the
// capability itself (a removexattr in the owner's name, which Ceph alone
// would refuse: it lets only writers of a file remove a security.* xattr),
// then the chgrp goes on.
TEST_F(CephCapabilityTest, ChgrpByTheOwnerOfAReadOnlyFileDropsIt) {
  Create("g", 0555);
  ASSERT_EQ(chown(Other("g").c_str(), bob_.uid, bob_.gid), 0);
  SetCap("g");
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        return chown(Slow("g").c_str(), static_cast<uid_t>(-1),
                                     bob_.gid) == 0
                                   ? 0
                                   : errno;
                      }),
            0);
  ExpectCapGone("g");
}

// The count of op `op` in the mount's /.fgds/stats (~0: no such row).
uint64_t OpCount(const std::string& mountpoint, const std::string& op) {
  std::string stats = ReadAll(mountpoint + "/.fgds/stats");
  size_t at = stats.find("\n" + op + " ");
  if (at == std::string::npos) return ~0ull;
  return std::stoull(
      stats.substr(stats.find_first_not_of(' ', at + op.size() + 1)));
}

// What FUSE_HANDLE_KILLPRIV_V2 is for: the kernel no longer asks for
// security.capability before each write (once per inode, then S_NOSEC).
TEST_F(CephCapabilityTest, SmallWritesAskNoGetxattrEach) {
  Create("n", 0644);
  const uint64_t before = OpCount(slow_->mountpoint(), "getxattr");
  ASSERT_NE(before, ~0ull);
  int fd = open(Slow("n").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::vector<char> data(kBlock, 'n');
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(pwrite(fd, data.data(), kBlock, i * kBlock),
              static_cast<ssize_t>(kBlock));
  }
  ASSERT_EQ(close(fd), 0);
  EXPECT_LE(OpCount(slow_->mountpoint(), "getxattr") - before, 2u);
}

// A usrbio write never passes through the kernel: only the daemon can drop
// the capability.
TEST_F(CephCapabilityTest, RingWriteByAnotherUserDropsIt) {
  Create("u", 0666);
  SetCap("u");
  const std::string mnt = slow_->mountpoint();
  EXPECT_EQ(
      RunAsUser(bob_,
                [&] { return RingWritePattern(mnt, Slow("u"), 0, kBlock, 7); }),
      0);
  ExpectCapGone("u");
}

// A large ring write by bob to a set-uid, set-gid file with a capability:
// the bits and the capability go before any of its pieces (one per 4 MiB
// object) lands, and every byte arrives.
TEST_F(CephCapabilityTest, LargeRingWriteDropsSetIdBitsAndCapability) {
  Create("l", 06777);
  SetCap("l");
  const std::string mnt = slow_->mountpoint();
  constexpr uint64_t kLen = 9 << 20;
  EXPECT_EQ(
      RunAsUser(bob_,
                [&] { return RingWritePattern(mnt, Slow("l"), 1, kLen, 9); }),
      0);
  struct stat st = {};
  ExpectCapGone("l", &st);
  EXPECT_EQ(st.st_mode & 07777, 0777u) << std::oct << st.st_mode;
  std::vector<char> back(kLen);
  int fd = open(Other("l").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(pread(fd, back.data(), kLen, 1), static_cast<ssize_t>(kLen));
  close(fd);
  EXPECT_TRUE(MatchesPattern(back.data(), kLen, 9, 1));
}

// Root's writes keep a set-uid bit (it has CAP_FSETID) but drop the
// capability, POSIX and usrbio alike.
TEST_F(CephCapabilityTest, RootsWriteKeepsSetUidButDropsIt) {
  Create("r", 04755);
  SetCap("r");
  int fd = open(Slow("r").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "root", 4, 0), 4);
  ASSERT_EQ(close(fd), 0);
  struct stat st = {};
  ExpectCapGone("r", &st);
  EXPECT_EQ(st.st_mode & 07777, 04755u) << std::oct << st.st_mode;
  SetCap("r");
  EXPECT_EQ(RingWritePattern(slow_->mountpoint(), Slow("r"), 0, kBlock, 3), 0);
  ExpectCapGone("r", &st);
  EXPECT_EQ(st.st_mode & 07777, 04755u) << std::oct << st.st_mode;
}

}  // namespace
}  // namespace fgds::testing
