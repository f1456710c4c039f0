// POSIX ACLs through the mount and through usrbio (issue 12): an ACL is
// enforced for every way in, or not stored at all. Real users
// (test_users.h): alice owns the files and writes their ACLs, bob is named
// in them. usrbio registrations rest on a descriptor opened through the
// mount, so the kernel checked the ACL at that open. And since the kernel
// caches ACLs, asking for them again does not reach the daemon (issue 16).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/usrbio_harness.h"
#include "tests/lib/posix_acl.h"

namespace fgds::testing {
namespace {

class PosixAclTest : public UsrbioTwoUsersTest {
 protected:
  // alice creates `name` (one 4 KiB block of her pattern, `mode`) and gives
  // it the access ACL `acl`, all through the mount.
  void CreateWithAclAsAlice(const std::string& name, mode_t mode,
                            const std::string& acl) {
    const std::string path = Shared(name);
    ASSERT_EQ(RunAsUser(alice_,
                        [&] {
                          int fd = open(path.c_str(), O_CREAT | O_WRONLY, mode);
                          if (fd < 0) return 1;
                          std::vector<char> data(4096);
                          FillPattern(data.data(), data.size(), 1, 0);
                          if (write(fd, data.data(), data.size()) != 4096) {
                            return 2;
                          }
                          if (close(fd) != 0) return 3;
                          return setxattr(path.c_str(), kAclAccess, acl.data(),
                                          acl.size(), 0) == 0
                                     ? 0
                                     : 4;
                        }),
              0)
        << strerror(errno);
  }

  // How many getxattr requests the daemon has served (/.fgds/stats).
  uint64_t DaemonGetxattrCount() const {
    std::ifstream stats(Mnt(".fgds/stats"));
    std::string line;
    while (std::getline(stats, line)) {
      std::istringstream fields(line);
      std::string op;
      uint64_t count = 0;
      if (fields >> op >> count && op == "getxattr") return count;
    }
    return UINT64_MAX;
  }
};

TEST_F(PosixAclTest, AnAclDenyingBobIsEnforcedThroughTheMount) {
  // World-readable by its mode; the ACL takes reading away from bob alone.
  CreateWithAclAsAlice("secret", 0644,
                       AclXattr({{ACL_USER_OBJ, 6},
                                 {ACL_USER, 0, bob_.uid},
                                 {ACL_GROUP_OBJ, 4},
                                 {ACL_MASK, 4},
                                 {ACL_OTHER, 4}}));
  const std::string path = Shared("secret");
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(path.c_str(), O_RDONLY);
                        if (fd >= 0) return 1;  // read through the mount
                        return errno == EACCES ? 0 : 2;
                      }),
            0);
  // The backing file agrees. (bob may traverse the backing directory here,
  // as a file without an ACL shows.)
  const std::string backing_dir = fs_->backing();
  ASSERT_EQ(chmod(backing_dir.substr(0, backing_dir.rfind('/')).c_str(), 0755),
            0);
  ASSERT_EQ(chmod(backing_dir.c_str(), 0755), 0);
  const int public_fd =
      open(Shared("public").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(public_fd, 0);
  close(public_fd);
  const std::string backing = Backing("shared/secret");
  const std::string backing_public = Backing("shared/public");
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        int fd = open(backing_public.c_str(), O_RDONLY);
                        if (fd < 0) return 3;
                        close(fd);
                        fd = open(backing.c_str(), O_RDONLY);
                        if (fd >= 0) return 1;
                        return errno == EACCES ? 0 : 2;
                      }),
            0);
  // Everyone else still reads it.
  EXPECT_EQ(RunAsUser(alice_,
                      [&] {
                        int fd = open(path.c_str(), O_RDONLY);
                        return fd >= 0 && close(fd) == 0 ? 0 : 1;
                      }),
            0);
}

TEST_F(PosixAclTest, UsrbioRegistrationsFollowTheAcl) {
  // 0600: only the ACL lets bob in, and only to read.
  CreateWithAclAsAlice("granted", 0600,
                       AclXattr({{ACL_USER_OBJ, 6},
                                 {ACL_USER, 4, bob_.uid},
                                 {ACL_GROUP_OBJ, 0},
                                 {ACL_MASK, 4},
                                 {ACL_OTHER, 0}}));
  CreateWithAclAsAlice("denied", 0644,
                       AclXattr({{ACL_USER_OBJ, 6},
                                 {ACL_USER, 0, bob_.uid},
                                 {ACL_GROUP_OBJ, 4},
                                 {ACL_MASK, 4},
                                 {ACL_OTHER, 4}}));
  const std::string granted = Shared("granted");
  const std::string denied = Shared("denied");
  const std::string mountpoint = fs_->mountpoint();
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        Session s(mountpoint);
                        if (s.open_result != 0) return 1;
                        // Write access is refused at open, so never registered.
                        if (open(granted.c_str(), O_RDWR) >= 0) return 2;
                        if (open(denied.c_str(), O_RDONLY) >= 0) return 3;
                        // A descriptor that grants no access registers nothing.
                        int path_fd = open(denied.c_str(), O_PATH);
                        if (path_fd < 0) return 4;
                        if (fgds_fd_register(&s.s, path_fd, 0) >= 0) return 5;
                        close(path_fd);
                        // What the ACL grants works: a ring read of alice's
                        // data.
                        int fd = open(granted.c_str(), O_RDONLY);
                        if (fd < 0) return 6;
                        int id = fgds_fd_register(&s.s, fd, 0);
                        close(fd);
                        if (id < 0) return 7;
                        Iov iov(&s.s, 4096);
                        Ior ior(&s.s);
                        if (iov.result != 0 || ior.result != 0) return 8;
                        fgds_cqe cqe = {};
                        if (fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0,
                                           4096, 0) != 0 ||
                            SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1 ||
                            cqe.result != 4096 ||
                            !MatchesPattern(iov.at(0), 4096, 1, 0)) {
                          return 9;
                        }
                        // And a ring write to that read-only registration
                        // fails.
                        if (fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id,
                                            0, 4096, 1) != 0 ||
                            SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1 ||
                            cqe.result != -EACCES) {
                          return 10;
                        }
                        return 0;
                      }),
            0);
}

TEST_F(PosixAclTest, TheKernelCachesAclsSoListingsDoNotAskEachTime) {
  // `ls -l` asks for system.posix_acl_access of every entry; with the
  // kernel's ACL handling the answer (mostly "none") is cached per inode.
  constexpr int kFiles = 50;
  for (int i = 0; i < kFiles; ++i) {
    int fd =
        open(Shared("f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  auto list = [&] {
    for (int i = 0; i < kFiles; ++i) {
      char buf[256];
      // No ACL: ENODATA, as on a local filesystem.
      EXPECT_EQ(getxattr(Shared("f" + std::to_string(i)).c_str(), kAclAccess,
                         buf, sizeof(buf)),
                -1);
      EXPECT_EQ(errno, ENODATA);
    }
  };
  list();
  const uint64_t after_first = DaemonGetxattrCount();
  ASSERT_NE(after_first, UINT64_MAX);
  list();
  list();
  EXPECT_EQ(DaemonGetxattrCount(), after_first)
      << "repeated ACL queries reached the daemon";
}

}  // namespace
}  // namespace fgds::testing
