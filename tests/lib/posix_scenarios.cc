#include "tests/lib/posix_scenarios.h"

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace fgds::testing {

std::vector<Scenario> AllPosixScenarios() {
  std::vector<Scenario> all;
  for (auto group :
       {NamespaceScenarios, LinkScenarios, AttrScenarios, XattrScenarios,
        IoScenarios, SpaceScenarios, LockScenarios, PermissionScenarios}) {
    for (const Scenario& s : group()) all.push_back(s);
  }
  return all;
}

std::unique_ptr<Trace> RunScenario(const Scenario& s,
                                   const std::string& parent) {
  auto t = std::make_unique<Trace>();
  std::string dir = absl::StrCat(parent, "/", s.name);
  mode_t old_umask = umask(022);
  int saved_cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mkdir(dir.c_str(), 0755) != 0 || chdir(dir.c_str()) != 0) {
    t->Expect(false,
              absl::StrCat("cannot enter ", dir, ": ", ErrnoName(errno)));
  } else {
    s.run(*t);
  }
  if (saved_cwd < 0 || fchdir(saved_cwd) != 0) {
    // Never stay inside the mount: it could not be unmounted.
    if (chdir("/") != 0) t->Expect(false, "cannot leave the scenario dir");
  }
  if (saved_cwd >= 0) close(saved_cwd);
  umask(old_umask);
  return t;
}

bool IsA(const std::optional<struct stat>& st, mode_t type, mode_t perm) {
  return st.has_value() && (st->st_mode & S_IFMT) == type &&
         (st->st_mode & 07777) == perm;
}

bool InWindow(const struct timespec& ts, const struct timespec& lo,
              const struct timespec& hi) {
  auto le = [](const struct timespec& a, const struct timespec& b) {
    return a.tv_sec < b.tv_sec ||
           (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
  };
  return le(lo, ts) && le(ts, hi);
}

struct timespec WindowStart() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts;
}

struct timespec WindowEnd() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

const char* YesNo(bool b) { return b ? "yes" : "no"; }

bool SameInode(const char* a, const char* b) {
  struct stat sa, sb;
  return lstat(a, &sa) == 0 && lstat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
         sa.st_dev == sb.st_dev;
}

const char* TooLongName() {
  static const std::string* name = new std::string(256, 'n');
  return name->c_str();
}

}  // namespace fgds::testing
