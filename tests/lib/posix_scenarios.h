// File: tests/lib/posix_scenarios.h
//
// The POSIX semantics scenarios: each runs a fixed list of steps (calls and
// observations, see posix_trace.h) in an empty directory and records a
// Trace. tests/integration/posix_semantics_test.cc runs every scenario on
// the FUSE mount and on a local directory and requires equal traces and no
// failed absolute expectation on either side.
//
// Scenario rules: paths are relative (RunScenario makes the scenario's
// directory the working directory); calls go through FGDS_SYS or the Trace
// observers so they show up in the trace; nothing recorded may depend on
// the directory's location, inode numbers or the current time (times that
// are not set explicitly are checked against a window and recorded as
// yes/no); permission steps run in RunAs children.
#ifndef FGDS_TESTS_LIB_POSIX_SCENARIOS_H_
#define FGDS_TESTS_LIB_POSIX_SCENARIOS_H_

#include <sys/stat.h>
#include <time.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/lib/posix_trace.h"

namespace fgds::testing {

struct Scenario {
  const char* name;  // a gtest parameter name: letters and digits
  void (*run)(Trace& t);
};

// For gtest, which prints test parameters.
inline void PrintTo(const Scenario& s, std::ostream* os) { *os << s.name; }

// Groups, one per file (posix_scenarios_<group>.cc).
std::vector<Scenario> NamespaceScenarios();   // lookup, mkdir, mknod, readdir
std::vector<Scenario> LinkScenarios();        // unlink, rename, link, symlink
std::vector<Scenario> AttrScenarios();        // chmod, chown, truncate, times
std::vector<Scenario> XattrScenarios();       // user.* extended attributes
std::vector<Scenario> IoScenarios();          // open flags, read/write, sync
std::vector<Scenario> SpaceScenarios();       // fallocate, copy, SEEK_DATA
std::vector<Scenario> LockScenarios();        // flock, POSIX and OFD locks
std::vector<Scenario> PermissionScenarios();  // other users, ownership
std::vector<Scenario> AllPosixScenarios();

// Creates `parent`/`s.name` (mode 0755), runs `s` there with umask 022 and
// returns its trace. The working directory and umask are restored after.
std::unique_ptr<Trace> RunScenario(const Scenario& s,
                                   const std::string& parent);

// Helpers shared by the scenario files.

// True if `st` exists with file type `type` (S_IFREG...) and permission
// bits `perm`.
bool IsA(const std::optional<struct stat>& st, mode_t type, mode_t perm);

// A time that satisfies `lo <= ts <= hi`, for times the filesystem sets
// itself (UTIME_NOW): only whether it lies in the window is recorded.
bool InWindow(const struct timespec& ts, const struct timespec& lo,
              const struct timespec& hi);
// The window bounds. A filesystem may stamp times from the coarse clock,
// which lags the fine one: so the window opens with a coarse reading taken
// before the call and closes with a fine reading taken after it.
struct timespec WindowStart();
struct timespec WindowEnd();

// "yes" or "no", for observations recorded as booleans.
const char* YesNo(bool b);

// True if both paths exist (not followed) and are one inode.
bool SameInode(const char* a, const char* b);

// A name one byte longer than NAME_MAX (255).
const char* TooLongName();

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_POSIX_SCENARIOS_H_
