// File: tests/lib/posix_child.h
//
// Forked children for the POSIX scenarios: tests run as root, which bypasses
// permission checks, so permission and ownership steps run in a child that
// has dropped to another user; file locks need a second process to conflict
// with.
//
// The child only makes system calls after fork (the parent may hold locks of
// other threads, e.g. in malloc): it records each call into a ChildLog that
// lives in shared memory, and the parent copies the log into its Trace once
// the child is done.
//
// Example:
//   RunAs(t, kNobody, [](ChildLog& log) {
//     FGDS_CHILD_SYS(log, open("root_only", O_RDONLY));
//   });
//   // t now has "[65534] open("root_only", O_RDONLY) = -1 EACCES".
#ifndef FGDS_TESTS_LIB_POSIX_CHILD_H_
#define FGDS_TESTS_LIB_POSIX_CHILD_H_

#include <sys/types.h>

#include <cerrno>
#include <vector>

#include "absl/functional/function_ref.h"
#include "tests/lib/posix_trace.h"

namespace fgds::testing {

// Calls made by a child, in order. Fixed size, no allocation: safe to use
// between fork and _exit.
class ChildLog {
 public:
  static constexpr int kMaxEntries = 64;

  template <typename F>
  long Call(const char* label, F&& f) {
    errno = 0;
    long rc = static_cast<long>(f());
    int err = rc < 0 ? errno : 0;
    if (count_ < kMaxEntries) entries_[count_] = Entry{label, rc, err};
    ++count_;
    return rc;
  }

 private:
  friend class ChildRunner;
  struct Entry {
    // A string literal: fork keeps it at the same address in the parent.
    const char* label;
    long rc;
    int err;
  };
  int count_ = 0;
  Entry entries_[kMaxEntries];
};

// Records `expr` in a ChildLog, labelled with its source text.
#define FGDS_CHILD_SYS(log, expr) (log).Call(#expr, [&]() { return (expr); })

struct Credentials {
  uid_t uid;
  gid_t gid;
};
inline constexpr Credentials kNobody{65534, 65534};
inline constexpr Credentials kRoot{0, 0};

// Runs `body` in a forked child that keeps the working directory, drops to
// `cred` (setgroups(0), setgid, setuid; nothing is dropped for kRoot) and
// then exits. The child's calls are appended to `t` as
// "[uid] label = result" lines and returned in order. If the child could not
// drop privileges or died, that is recorded as an expectation failure.
std::vector<SysResult> RunAs(Trace& t, Credentials cred,
                             absl::FunctionRef<void(ChildLog&)> body);

// A child (with the parent's credentials) that runs `setup`, then stays
// alive, holding whatever it acquired (e.g. a POSIX lock), until Release()
// or destruction. Keep at most one alive at a time: a second child would
// inherit the first one's release pipe and keep it from exiting.
class HoldingChild {
 public:
  // Returns after the child has finished `setup`; its calls are appended to
  // `t` like RunAs's.
  HoldingChild(Trace& t, absl::FunctionRef<void(ChildLog&)> setup);
  ~HoldingChild();
  HoldingChild(const HoldingChild&) = delete;
  HoldingChild& operator=(const HoldingChild&) = delete;

  pid_t pid() const { return pid_; }
  // Lets the child exit and reaps it. Idempotent.
  void Release();

 private:
  pid_t pid_ = -1;
  int release_fd_ = -1;  // write end; the child exits on EOF
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_POSIX_CHILD_H_
