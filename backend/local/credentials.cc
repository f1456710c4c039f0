#include "backend/local/credentials.h"

#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace fgds::backend {
namespace {

int SetThreadGroups(const std::vector<gid_t>& groups) {
  if (syscall(SYS_setgroups, groups.size(), groups.data()) != 0) return -errno;
  return 0;
}

}  // namespace

ScopedCredentials::ScopedCredentials(const Caller& caller) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (caller.uid == uid && caller.gid == gid && caller.groups.empty()) return;
  int n = getgroups(0, nullptr);
  if (n < 0) {
    error_ = -errno;
    return;
  }
  saved_groups_.resize(static_cast<size_t>(n));
  if (getgroups(n, saved_groups_.data()) < 0) {
    error_ = -errno;
    return;
  }
  saved_uid_ = static_cast<uid_t>(setfsuid(static_cast<uid_t>(-1)));
  saved_gid_ = static_cast<gid_t>(setfsgid(static_cast<gid_t>(-1)));
  // From here on the destructor restores everything, whatever fails.
  switched_ = true;
  // Groups and gid first: once the fsuid is not root, the thread may lack
  // the capability to change them.
  if (int err = SetThreadGroups(caller.groups); err != 0) {
    error_ = err;
    return;
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
  if (!switched_) return;
  setfsuid(saved_uid_);
  setfsgid(saved_gid_);
  SetThreadGroups(saved_groups_);
}

}  // namespace fgds::backend
