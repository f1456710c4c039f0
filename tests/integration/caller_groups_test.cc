// The daemon checks a create with the caller's supplementary groups as they
// are at that moment (fusefs/caller_groups.h keeps each caller's /proc
// status file open between requests, never its groups): a process that
// dropped a group can no longer create where only that group may write.
//
// The kernel checks too (default_permissions), with the attributes it has
// cached, so to see the daemon's own check the test makes the kernel's view
// grant what the backing directory denies: each directory is made through
// the mount (mode 0777, cached by the kernel for its attribute timeout),
// then, behind the mount's back, given to the group and closed to others.
// Only the daemon, which creates with the caller's groups on the backing
// directory, can then say no.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

constexpr gid_t kGroup = 4242;  // a group only the test's child is in
constexpr uid_t kUser = 65534;  // nobody
constexpr int kDirs = 12;       // per phase: more than the daemon's threads

// Raw syscalls: the child is single-threaded, and glibc's wrappers would be
// the same, but these are async-signal-safe after fork.
int Sys(long res) { return res == 0 ? 0 : errno; }

// In a forked child: acts as nobody with the supplementary group kGroup
// (saved uid 0, so it can come back to drop the group), creates a file in
// each "with/N", drops kGroup, creates in each "without/N". Writes one errno
// per create (0: created) to `out`.
[[noreturn]] void Child(const std::string& mnt, int out) {
  const gid_t with[] = {kGroup};
  if (Sys(syscall(SYS_setgroups, 1, with)) != 0 ||
      Sys(syscall(SYS_setresgid, kUser, kUser, kUser)) != 0 ||
      Sys(syscall(SYS_setresuid, kUser, kUser, 0)) != 0) {
    _exit(126);
  }
  auto create_all = [&](const char* phase) {
    for (int i = 0; i < kDirs; ++i) {
      std::string path = absl::StrCat(mnt, "/", phase, "/", i, "/f");
      int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      int err = fd >= 0 ? 0 : errno;
      if (fd >= 0) close(fd);
      if (write(out, &err, sizeof(err)) != sizeof(err)) _exit(125);
    }
  };
  create_all("with");
  // Back to euid 0 for the capability to change groups, then nobody again
  // without kGroup: the same process (same pid, same threads' ids) whose
  // status files the daemon's threads may hold open.
  if (Sys(syscall(SYS_setresuid, -1, 0, -1)) != 0 ||
      Sys(syscall(SYS_setgroups, 0, nullptr)) != 0 ||
      Sys(syscall(SYS_setresuid, -1, kUser, -1)) != 0) {
    _exit(124);
  }
  create_all("without");
  _exit(0);
}

TEST(CallerGroupsTest, ADroppedGroupNoLongerLetsTheCallerCreate) {
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "needs root and /dev/fuse";
  }
  if (TestingCeph()) GTEST_SKIP() << "changes the backing directory directly";
  auto fs = MountedFs::Start();
  ASSERT_TRUE(fs.ok()) << fs.status();
  const std::string mnt = (*fs)->mountpoint();
  const std::string backing = (*fs)->backing();
  for (const char* phase : {"with", "without"}) {
    ASSERT_EQ(mkdir((mnt + "/" + phase).c_str(), 0755), 0) << strerror(errno);
    for (int i = 0; i < kDirs; ++i) {
      const std::string dir = absl::StrCat(phase, "/", i);
      ASSERT_EQ(mkdir((mnt + "/" + dir).c_str(), 0777), 0) << strerror(errno);
      ASSERT_EQ(chmod((mnt + "/" + dir).c_str(), 0777), 0);  // past umask
      struct stat st;
      ASSERT_EQ(stat((mnt + "/" + dir).c_str(), &st), 0);
      ASSERT_EQ(st.st_mode & 07777, 0777u);
      // Behind the mount: only root and kGroup may write.
      ASSERT_EQ(chown((backing + "/" + dir).c_str(), 0, kGroup), 0);
      ASSERT_EQ(chmod((backing + "/" + dir).c_str(), 0770), 0);
      // The kernel still sees 0777 (else the test proves nothing).
      ASSERT_EQ(stat((mnt + "/" + dir).c_str(), &st), 0);
      ASSERT_EQ(st.st_mode & 07777, 0777u) << "attributes not cached";
    }
  }
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    Child(mnt, pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::vector<int> errs;
  int err;
  while (read(pipe_fds[0], &err, sizeof(err)) == sizeof(err)) {
    errs.push_back(err);
  }
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(errs.size(), 2u * kDirs);
  for (int i = 0; i < kDirs; ++i) {
    EXPECT_EQ(errs[i], 0) << "with/" << i << ": " << strerror(errs[i]);
    struct stat st;
    EXPECT_EQ(lstat(absl::StrCat(backing, "/with/", i, "/f").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kUser);
  }
  for (int i = 0; i < kDirs; ++i) {
    EXPECT_EQ(errs[kDirs + i], EACCES)
        << "without/" << i << ": " << strerror(errs[kDirs + i]);
    EXPECT_NE(access(absl::StrCat(backing, "/without/", i, "/f").c_str(), F_OK),
              0);
  }
}

}  // namespace
}  // namespace fgds::testing
