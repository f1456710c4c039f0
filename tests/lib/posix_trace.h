// File: tests/lib/posix_trace.h
//
// Trace records what a POSIX scenario observed, one text line per step, so
// the same scenario run on the FUSE mount and on a plain local directory can
// be compared line by line. A line holds everything that must agree: the
// return value and errno of a call, or an observed value (stat fields,
// directory listing, file contents). Lines never contain absolute paths,
// inode or device numbers, because those legitimately differ.
//
// A scenario also states absolute expectations (Expect*): a difference test
// alone would pass if the mount and the local filesystem were equally wrong.
// Expectation failures are collected, not thrown, so the whole trace of
// both sides can still be printed.
//
// Scenarios run with the working directory set to their private root
// (see RunScenario), so paths in calls and labels are relative.
//
// Example:
//   Trace t;
//   t.ExpectOk(FGDS_SYS(t, mkdir("d", 0755)));
//   t.ExpectErrno(FGDS_SYS(t, mkdir("d", 0755)), EEXIST);
//   t.Lstat("d");  // records "lstat(d): dir 0755 nlink=2 uid=0 gid=0"
//
// Thread safety: a Trace is used from one thread.
#ifndef FGDS_TESTS_LIB_POSIX_TRACE_H_
#define FGDS_TESTS_LIB_POSIX_TRACE_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace fgds::testing {

// The outcome of one call: rc as returned, err = errno when rc < 0, else 0.
struct SysResult {
  std::string label;
  long rc = 0;
  int err = 0;
  bool ok() const { return rc >= 0; }
  // For calls that return a file descriptor: it, or -1.
  int fd() const { return rc >= 0 ? static_cast<int>(rc) : -1; }
};

// "ENOENT" for ENOENT, "errno 1234" for unknown values, "OK" for 0.
std::string ErrnoName(int err);

// One line describing the fields of `st` that must agree between two
// filesystems: type, permission bits, size (not for directories, whose size
// is filesystem specific), nlink, uid, gid.
std::string DescribeStat(const struct stat& st);

class Trace {
 public:
  Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Runs `f` (a call that returns an int-like result and sets errno on
  // failure) and records "label = rc" or "label = -1 ENAME". Use through
  // FGDS_SYS so the label is the call's own source text.
  template <typename F>
  SysResult Call(absl::string_view label, F&& f) {
    errno = 0;
    long rc = static_cast<long>(f());
    int err = rc < 0 ? errno : 0;
    return Record(label, rc, err);
  }
  SysResult Record(absl::string_view label, long rc, int err);

  // Records an observation "label: value".
  void Note(absl::string_view label, absl::string_view value);

  // Observations. Each records one line and returns what it saw.
  std::optional<struct stat> Stat(const char* path);
  std::optional<struct stat> Lstat(const char* path);
  std::optional<struct stat> Fstat(int fd, absl::string_view label);
  // atime and mtime with nanoseconds, for times a scenario set explicitly.
  void Times(const char* path);
  // Sorted "name:type" entries of a directory, "." and ".." included.
  void ReadDir(const char* path);
  // The whole content of a file: escaped when short, else length, hash and
  // the layout of zero and non-zero byte runs.
  std::string Content(const char* path);
  std::string ContentFd(int fd, absl::string_view label);
  // Sorted names of the user.* extended attributes (others, such as
  // security.* labels, depend on the host and are not compared).
  void UserXattrs(const char* path);

  // Creates (or truncates) a regular file holding `data`; one line.
  SysResult CreateFile(const char* path, absl::string_view data,
                       mode_t mode = 0644);

  // Absolute expectations; failures are kept in failures().
  void Expect(bool cond, absl::string_view what);
  void ExpectOk(const SysResult& r);
  void ExpectRc(const SysResult& r, long rc);
  void ExpectErrno(const SysResult& r, int err);
  void ExpectErrnoIn(const SysResult& r, std::initializer_list<int> errs);

  const std::vector<std::string>& lines() const { return lines_; }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::vector<std::string> lines_;
  std::vector<std::string> failures_;
};

// A pattern of non-zero bytes (so zero runs in Content() mean holes or
// zeroed ranges), different for each `seed`.
std::string Pattern(size_t len, int seed = 0);

// A line diff of two traces: common lines, then lines only in `a` marked
// "-" and lines only in `b` marked "+".
std::string DiffTraces(const Trace& a, absl::string_view a_name, const Trace& b,
                       absl::string_view b_name);

}  // namespace fgds::testing

// Records the call `expr` in `trace`, labelled with its source text.
#define FGDS_SYS(trace, expr) (trace).Call(#expr, [&]() { return (expr); })

#endif  // FGDS_TESTS_LIB_POSIX_TRACE_H_
