#include "backend/local/credentials.h"

#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace fgds::backend {
namespace {

int SetThreadGroups(const std::vector<gid_t>& groups) {
  if (syscall(SYS_setgroups, groups.size(), groups.data()) != 0) return -errno;
  return 0;
}

// What a daemon thread acts as when no ScopedCredentials is active. Read
// once per thread rather than per request (that was 6 syscalls of every
// create): nothing in the daemon changes a thread's ids except
// ScopedCredentials, which always puts them back, and the process's own
// ids never change after start (no setuid/setgroups calls; glibc's
// wrappers would change every thread at once).
struct ThreadIds {
  bool known = false;
  uid_t fsuid = 0;
  gid_t fsgid = 0;
  std::vector<gid_t> groups;
};

thread_local ThreadIds base_ids;
// Whether a ScopedCredentials is alive on this thread. They never nest:
// the restore goes back to base_ids, not to an outer caller's ids.
thread_local bool scope_active = false;

// The thread's own ids, or nullptr with *error set.
const ThreadIds* BaseIds(int* error) {
  if (base_ids.known) return &base_ids;
  int n = getgroups(0, nullptr);
  if (n < 0) {
    *error = -errno;
    return nullptr;
  }
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (n > 0 && getgroups(n, groups.data()) < 0) {
    *error = -errno;
    return nullptr;
  }
  base_ids.fsuid = static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)));
  base_ids.fsgid = static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1)));
  base_ids.groups = std::move(groups);
  base_ids.known = true;
  return &base_ids;
}

}  // namespace

ScopedCredentials::ScopedCredentials(const Caller& caller) {
  if (scope_active) {
    std::fprintf(stderr,
                 "fgds: INTERNAL ERROR: nested ScopedCredentials would "
                 "restore the wrong ids\n");
    std::abort();
  }
  scope_active = true;
  const ThreadIds* base = BaseIds(&error_);
  if (base == nullptr) return;
  // No groups with the daemon's own uid (a root caller: CallerOf leaves
  // them out, since fsuid 0 keeps the daemon's capabilities and groups
  // then decide nothing): the thread's groups stay.
  const bool groups_differ =
      caller.groups != base->groups &&
      !(caller.groups.empty() && caller.uid == base->fsuid);
  if (caller.uid == base->fsuid && caller.gid == base->fsgid &&
      !groups_differ) {
    return;  // acting as the caller already: nothing to switch
  }
  saved_uid_ = base->fsuid;
  saved_gid_ = base->fsgid;
  // From here on the destructor restores everything, whatever fails.
  switched_ = true;
  // Groups and gid first: once the fsuid is not root, the thread may lack
  // the capability to change them.
  if (groups_differ) {
    groups_switched_ = true;
    if (int err = SetThreadGroups(caller.groups); err != 0) {
      error_ = err;
      return;
    }
  }
  setfsgid(caller.gid);
  setfsuid(caller.uid);
  // setfsuid reports failure only by returning the old value; check that the
  // switch took, so nothing is ever created as root by mistake.
  if (static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1))) != caller.uid ||
      static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1))) != caller.gid) {
    error_ = -EPERM;
  }
}

ScopedCredentials::~ScopedCredentials() {
  scope_active = false;
  if (!switched_) return;
  setfsuid(saved_uid_);
  setfsgid(saved_gid_);
  if (groups_switched_) SetThreadGroups(base_ids.groups);
}

}  // namespace fgds::backend
