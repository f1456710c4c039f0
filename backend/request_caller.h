// File: backend/request_caller.h
//
// The caller of the request the calling thread serves. The FUSE layer
// installs one around each namespace request it hands to a backend that
// asks for it (Backend::WantsRequestCaller): a backend whose storage checks
// permissions itself (ceph: the MDS and libcephfs check a UserPerm) then
// passes the caller's uid, gid and groups with every call, not only with
// the calls that create. Calls the daemon makes on its own (usrbio
// registration, teardown, I/O on engine threads) see none.
//
// Thread safety: per thread; a scope must end on the thread it began on.
#ifndef FGDS_BACKEND_REQUEST_CALLER_H_
#define FGDS_BACKEND_REQUEST_CALLER_H_

#include "backend/backend.h"

namespace fgds::backend {

namespace internal {
inline thread_local const Caller* request_caller = nullptr;
}  // namespace internal

// The caller of the request this thread serves, or null. Valid until the
// scope that installed it ends.
inline const Caller* CurrentRequestCaller() { return internal::request_caller; }

// Makes `caller` (not owned; it outlives the scope) this thread's request
// caller until the scope ends, then restores the previous one.
class ScopedRequestCaller {
 public:
  explicit ScopedRequestCaller(const Caller* caller)
      : previous_(internal::request_caller) {
    internal::request_caller = caller;
  }
  ~ScopedRequestCaller() { internal::request_caller = previous_; }
  ScopedRequestCaller(const ScopedRequestCaller&) = delete;
  ScopedRequestCaller& operator=(const ScopedRequestCaller&) = delete;

 private:
  const Caller* const previous_;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_REQUEST_CALLER_H_
