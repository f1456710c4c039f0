// File: backend/local/credentials.h
//
// ScopedCredentials makes the calling thread act as a FUSE caller on the
// backing filesystem: filesystem uid, gid and supplementary groups of that
// caller, so what it creates gets the owner, group and permission checks a
// local filesystem would give (setgid directories included). Only this
// thread changes: setfsuid/setfsgid are per-thread, and setgroups is called
// as a raw syscall because glibc's wrapper changes every thread.
//
// Cost: nothing when the caller is who the thread acts as already (the
// daemon's own uid and gid, e.g. root); else 5 syscalls to switch (groups
// only when they differ) and 2-3 to restore.
//
// Never nested on one thread (aborts): the destructor restores the
// thread's own ids, not an outer scope's.
//
// Thread safety: affects only the constructing thread; restore happens in
// the destructor on that same thread.
#ifndef FGDS_BACKEND_LOCAL_CREDENTIALS_H_
#define FGDS_BACKEND_LOCAL_CREDENTIALS_H_

#include <sys/types.h>

#include "backend/backend.h"

namespace fgds::backend {

class ScopedCredentials {
 public:
  explicit ScopedCredentials(const Caller& caller);
  ~ScopedCredentials();
  ScopedCredentials(const ScopedCredentials&) = delete;
  ScopedCredentials& operator=(const ScopedCredentials&) = delete;

  // 0, or the -errno that prevented switching (the operation must not run).
  int error() const { return error_; }

 private:
  bool switched_ = false;
  bool groups_switched_ = false;
  int error_ = 0;
  uid_t saved_uid_ = 0;
  gid_t saved_gid_ = 0;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_CREDENTIALS_H_
