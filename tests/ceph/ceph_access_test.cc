// Credentials, permissions and quotas through a ceph mount: every
// namespace call carries the caller's uid, gid and groups to Ceph
// (backend/request_caller.h), so Ceph's own checks apply, and CephFS's
// quotas surface as EDQUOT. Real unprivileged users (test_users.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

const auto* const env =
    ::testing::AddGlobalTestEnvironment(new CephClusterEnvironment);

class CephAccessTest : public CephTest {
 protected:
  void SetUp() override {
    CephTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto alice = EnsureTestUser(kAlice);
    ASSERT_TRUE(alice.ok()) << alice.status();
    auto bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    alice_ = *alice;
    bob_ = *bob;
    ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
    // The mount's private parent directory must let the users through.
    const std::string parent =
        fs_->mountpoint().substr(0, fs_->mountpoint().rfind('/'));
    ASSERT_EQ(chmod(parent.c_str(), 0755), 0);
  }

  TestUser alice_;
  TestUser bob_;
};

TEST_F(CephAccessTest, BobCannotReadAlicesPrivateFileAndOwnsWhatHeMakes) {
  const std::string secret = dir_ + "/secret", bobs = dir_ + "/bobs";
  ASSERT_EQ(RunAsUser(alice_,
                      [&] {
                        umask(077);
                        int fd = open(secret.c_str(), O_CREAT | O_WRONLY, 0666);
                        if (fd < 0) return 1;
                        bool ok = write(fd, "alice's", 7) == 7;
                        return close(fd) == 0 && ok ? 0 : 2;
                      }),
            0);
  struct stat st;
  ASSERT_EQ(stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, alice_.uid);
  EXPECT_EQ(st.st_gid, alice_.gid);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(secret.c_str(), O_RDONLY);
                        if (fd >= 0) return 1;
                        return errno == EACCES ? 0 : 2;
                      }),
            0);
  ASSERT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(bobs.c_str(), O_CREAT | O_WRONLY, 0644);
                        if (fd < 0) return 1;
                        return close(fd) == 0 ? 0 : 2;
                      }),
            0);
  ASSERT_EQ(stat(bobs.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, bob_.uid);
  EXPECT_EQ(st.st_gid, bob_.gid);
  // Alice may not remove bob's file from a sticky directory, says Ceph.
  ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);
  EXPECT_EQ(RunAsUser(alice_,
                      [&] {
                        if (unlink(bobs.c_str()) == 0) return 1;
                        return errno == EPERM || errno == EACCES ? 0 : 2;
                      }),
            0);
}

// The kernel checks permissions against the attributes it cached; Ceph
// checks them against the file as it is now. A mode changed by another
// client (a second daemon) within the first mount's attribute timeout is
// enforced by Ceph with the caller's credentials: with the daemon's own
// (root), bob would read alice's file here.
TEST_F(CephAccessTest, CephEnforcesTheCallersCredentialsPastStaleAttributes) {
  // A mount that keeps attributes a minute: the kernel's check stays stale.
  MountOptions options;
  options.extra_args = {
      "--backend",       "ceph",      "--ceph-conf",    ceph_cluster->conf,
      "--ceph-root",     "/" + name_, "--attr-timeout", "60",
      "--entry-timeout", "60"};
  options.timeout_ms = 40000;
  auto slow = MountedFs::Start(options);
  ASSERT_TRUE(slow.ok()) << slow.status();
  const std::string parent =
      (*slow)->mountpoint().substr(0, (*slow)->mountpoint().rfind('/'));
  ASSERT_EQ(chmod(parent.c_str(), 0755), 0);
  const std::string via_slow = (*slow)->mountpoint() + "/doc";
  const std::string via_fresh = dir_ + "/doc";

  ASSERT_EQ(RunAsUser(alice_,
                      [&] {
                        int fd =
                            open(via_fresh.c_str(), O_CREAT | O_WRONLY, 0644);
                        if (fd < 0) return 1;
                        bool ok = write(fd, "draft", 5) == 5 && fsync(fd) == 0;
                        return close(fd) == 0 && ok ? 0 : 2;
                      }),
            0);
  // Bob reads it through the slow mount: the kernel caches 0644.
  ASSERT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(via_slow.c_str(), O_RDONLY);
                        if (fd < 0) return 1;
                        close(fd);
                        return 0;
                      }),
            0);
  // Alice makes it private through the other mount.
  ASSERT_EQ(RunAsUser(alice_, [&] { return chmod(via_fresh.c_str(), 0600); }),
            0);
  struct stat st;
  ASSERT_EQ(stat(via_slow.c_str(), &st), 0);
  if ((st.st_mode & 07777) != 0644u) {
    GTEST_SKIP() << "the kernel dropped its cached mode (0" << std::oct
                 << (st.st_mode & 07777) << "): nothing stale to get past";
  }
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(via_slow.c_str(), O_RDONLY);
                        if (fd >= 0) return 1;
                        return errno == EACCES ? 0 : 2;
                      }),
            0);
}

TEST_F(CephAccessTest, QuotaSurfacesAsEdquot) {
  const std::string q = dir_ + "/q";
  ASSERT_EQ(mkdir(q.c_str(), 0755), 0);
  // 256 KiB: a 1 MiB write (one FUSE request) is over it at once.
  ASSERT_EQ(setxattr(q.c_str(), "ceph.quota.max_bytes", "262144", 6, 0), 0)
      << strerror(errno);
  char value[32] = {};
  ASSERT_GT(getxattr(q.c_str(), "ceph.quota.max_bytes", value, sizeof(value)),
            0);
  EXPECT_STREQ(value, "262144");
  int fd = open((q + "/f").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  std::vector<char> mib(1 << 20, 'q');
  EXPECT_EQ(pwrite(fd, mib.data(), mib.size(), 0), -1);
  EXPECT_EQ(errno, EDQUOT);
  // Under the quota, writes go on.
  EXPECT_EQ(pwrite(fd, mib.data(), 4096, 0), 4096) << strerror(errno);
  EXPECT_EQ(close(fd), 0);
  // Outside the quota's directory, nothing is limited.
  fd = open((dir_ + "/free").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(pwrite(fd, mib.data(), mib.size(), 0),
            static_cast<ssize_t>(mib.size()));
  close(fd);
}

}  // namespace
}  // namespace fgds::testing
