#include "tests/lib/posix_child.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"

namespace fgds::testing {

// Owns the shared-memory log and the parent's side of the protocol.
class ChildRunner {
 public:
  ChildRunner() {
    void* mem = mmap(nullptr, sizeof(ChildLog), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem != MAP_FAILED) log_ = new (mem) ChildLog();
  }
  ~ChildRunner() {
    if (log_ != nullptr) munmap(log_, sizeof(ChildLog));
  }
  ChildRunner(const ChildRunner&) = delete;
  ChildRunner& operator=(const ChildRunner&) = delete;

  ChildLog* log() { return log_; }

  // In the child: drops to `cred`. Exit codes name the step that failed.
  static void DropTo(Credentials cred) {
    if (cred.uid == 0 && cred.gid == 0) return;
    if (setgroups(0, nullptr) != 0) _exit(kExitSetgroups);
    if (setgid(cred.gid) != 0) _exit(kExitSetgid);
    if (setuid(cred.uid) != 0) _exit(kExitSetuid);
  }

  // In the parent: copies the log into `t` and checks how the child ended.
  std::vector<SysResult> Replay(Trace& t, Credentials cred, int status) {
    std::vector<SysResult> results;
    if (log_ == nullptr) {
      t.Expect(false, "mmap for the child log failed");
      return results;
    }
    int n = std::min(log_->count_, ChildLog::kMaxEntries);
    for (int i = 0; i < n; ++i) {
      const ChildLog::Entry& e = log_->entries_[i];
      results.push_back(
          t.Record(absl::StrCat("[", cred.uid, "] ", e.label), e.rc, e.err));
    }
    t.Expect(log_->count_ <= ChildLog::kMaxEntries, "child log overflowed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::string why = WIFEXITED(status)
                            ? absl::StrCat("exit code ", WEXITSTATUS(status))
                            : absl::StrCat("signal ", WTERMSIG(status));
      t.Expect(false,
               absl::StrCat("child as uid ", cred.uid, " failed: ", why, " (",
                            kExitSetgroups, "=setgroups ", kExitSetgid,
                            "=setgid ", kExitSetuid, "=setuid)"));
      t.Note("child status", why);
    }
    return results;
  }

  static constexpr int kExitSetgroups = 91;
  static constexpr int kExitSetgid = 92;
  static constexpr int kExitSetuid = 93;

 private:
  ChildLog* log_ = nullptr;
};

std::vector<SysResult> RunAs(Trace& t, Credentials cred,
                             absl::FunctionRef<void(ChildLog&)> body) {
  ChildRunner runner;
  if (runner.log() == nullptr) return runner.Replay(t, cred, 0);
  pid_t pid = fork();
  if (pid < 0) {
    t.Expect(false, absl::StrCat("fork: ", ErrnoName(errno)));
    return {};
  }
  if (pid == 0) {
    ChildRunner::DropTo(cred);
    body(*runner.log());
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return runner.Replay(t, cred, status);
}

HoldingChild::HoldingChild(Trace& t, absl::FunctionRef<void(ChildLog&)> setup) {
  ChildRunner runner;
  int ready[2], release[2];
  if (runner.log() == nullptr || pipe2(ready, O_CLOEXEC) != 0) {
    t.Expect(false, "HoldingChild: mmap or pipe failed");
    return;
  }
  if (pipe2(release, O_CLOEXEC) != 0) {
    close(ready[0]);
    close(ready[1]);
    t.Expect(false, "HoldingChild: pipe failed");
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    close(ready[0]);
    close(release[1]);
    setup(*runner.log());
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    // Hold until the parent closes its end (or dies).
    while (read(release[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(ready[1]);
  close(release[0]);
  release_fd_ = release[1];
  if (pid_ < 0) {
    t.Expect(false, absl::StrCat("fork: ", ErrnoName(errno)));
    close(ready[0]);
    return;
  }
  char c;
  ssize_t n;
  while ((n = read(ready[0], &c, 1)) < 0 && errno == EINTR) {
  }
  close(ready[0]);
  // A child that died during setup has exited; report how.
  int status = 0;
  if (n != 1) {
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  runner.Replay(t, kRoot, status);
}

HoldingChild::~HoldingChild() { Release(); }

void HoldingChild::Release() {
  if (release_fd_ >= 0) {
    close(release_fd_);
    release_fd_ = -1;
  }
  if (pid_ > 0) {
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

}  // namespace fgds::testing
