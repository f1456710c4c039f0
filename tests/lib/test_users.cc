#include "tests/lib/test_users.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgds::testing {
namespace {

absl::StatusOr<TestUser> Lookup(const std::string& name) {
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  int err = getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no user ", name, err != 0 ? ": " : "", err != 0 ? strerror(err) : ""));
  }
  return TestUser{name, pw.pw_uid, pw.pw_gid};
}

}  // namespace

absl::StatusOr<TestUser> EnsureTestUser(const std::string& name) {
  absl::StatusOr<TestUser> user = Lookup(name);
  if (user.ok()) return user;
  if (geteuid() != 0) {
    return absl::FailedPreconditionError("creating test users needs root");
  }
  // Several test processes may race to create the same user: useradd
  // locks /etc/passwd itself, but the loser fails with "already exists".
  // Serialize on a lock file and look again under it.
  int lock =
      open("/run/fgds-test-users.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) flock(lock, LOCK_EX);
  user = Lookup(name);
  if (!user.ok()) {
    pid_t pid = fork();
    if (pid == 0) {
      execlp("useradd", "useradd", "--system", "--user-group",
             "--no-create-home", "--shell", "/usr/sbin/nologin", name.c_str(),
             static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      if (lock >= 0) close(lock);
      return absl::InternalError(
          absl::StrCat("useradd ", name, " failed (status ", status, ")"));
    }
    user = Lookup(name);
  }
  if (lock >= 0) close(lock);
  return user;
}

int BecomeUser(const TestUser& user) {
  if (setgroups(1, &user.gid) != 0) return -errno;
  if (setgid(user.gid) != 0) return -errno;
  if (setuid(user.uid) != 0) return -errno;
  return 0;
}

}  // namespace fgds::testing
