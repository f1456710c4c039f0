// File: fusefs/session/user_limits.h
//
// UserLimits: what every local user may hold in the daemon through usrbio
// sessions, and what all of them together may hold. One table keyed by the
// uid the kernel reports for a session's socket peer (SO_PEERCRED), shared
// by every session of the daemon, so a user's second session counts against
// the same budget as the first.
//
// A resource is charged before it is created and released when it is gone:
// Take returns a Charge (RAII, move-only) that gives the amounts back when
// destroyed, so every exit path (a failed mmap after the charge, an
// unregister, the session ending, the last in-flight I/O completing after
// that) releases exactly what was taken. A charge is all or nothing: when
// any counter would pass its limit nothing is taken, and the refusal names
// the limit (FGDS_LIMIT_*, include/fgds/usrbio.h) so that the client can
// say which one.
//
// Per-user limits answer -EDQUOT (the user's own budget is spent; other
// users are unaffected). Daemon-wide caps answer -EAGAIN (the daemon as a
// whole is near what the kernel allows it: vm.max_map_count, address space,
// descriptors;
// it frees up when other sessions end). docs/limits.md lists each limit.
//
// Example:
//   auto limits = std::make_shared<UserLimits>(config);
//   Charge charge;
//   uint32_t refused = 0;
//   int ret = UserLimits::Take(limits, uid, {.mappings = 1, .bytes = size},
//                              &charge, &refused);
//   if (ret != 0) return ret;  // reply carries `refused`
//
// Thread safety: thread-safe. A Charge may be destroyed on any thread (an
// engine thread completing the last I/O).
#ifndef FGDS_FUSEFS_SESSION_USER_LIMITS_H_
#define FGDS_FUSEFS_SESSION_USER_LIMITS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/mutex.h"

namespace fgds::session {

// Amounts of each resource a user (or the daemon) holds.
struct Usage {
  uint64_t sessions = 0;
  uint64_t rings = 0;
  // Ring entries (submission slots) summed over the user's rings: bounds
  // the entries the user can have in flight in the daemon at once.
  uint64_t ring_entries = 0;
  // Memory regions the daemon maps for the user (a host iov, a ring, a
  // direct GPU iov: one each); each is one entry of the daemon's
  // vm.max_map_count.
  uint64_t mappings = 0;
  // Bytes of those mappings: daemon address space, and (for host memory)
  // the user's pages the daemon can write into.
  uint64_t bytes = 0;
  // Registered files: each holds up to two daemon descriptors (the
  // backend's file and its O_DIRECT twin) as long as it lives, which may
  // be after its unregister, until its last I/O completes.
  uint64_t files = 0;
};

struct UserLimitsConfig {
  Usage per_user;  // each counter: the most one uid may hold
  // What all users together may hold; sessions, rings and entries have no
  // daemon-wide cap here (the session server and the ring workers bound
  // those).
  uint64_t daemon_mappings = 0;
  uint64_t daemon_bytes = 0;
  // Registered files of all users, below the daemon's descriptor limit.
  uint64_t daemon_files = 0;
};

class UserLimits;

// Charge: amounts taken from UserLimits for one uid, given back on
// destruction (or Release). Empty when default-constructed.
class Charge {
 public:
  Charge() = default;
  ~Charge() { Release(); }
  Charge(Charge&& other) noexcept;
  Charge& operator=(Charge&& other) noexcept;
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

  // Gives the amounts back now; the Charge is empty afterwards.
  void Release();
  bool empty() const { return owner_ == nullptr; }

 private:
  friend class UserLimits;
  std::shared_ptr<UserLimits> owner_;  // keeps the table alive
  uid_t uid_ = 0;
  Usage amount_;
};

class UserLimits {
 public:
  explicit UserLimits(const UserLimitsConfig& config) : config_(config) {}
  UserLimits(const UserLimits&) = delete;
  UserLimits& operator=(const UserLimits&) = delete;

  const UserLimitsConfig& config() const { return config_; }

  // Takes `amount` for `uid` from `limits` into *charge (which must be
  // empty). Returns 0, or -EDQUOT (a per-user limit) / -EAGAIN (a
  // daemon-wide cap) with *refused = the FGDS_LIMIT_* that would be passed,
  // or -ENOMEM, taking nothing; never throws. `limits` null: no limits (0,
  // *charge stays empty).
  static int Take(const std::shared_ptr<UserLimits>& limits, uid_t uid,
                  const Usage& amount, Charge* charge, uint32_t* refused);

  // What `uid` holds now, and what all users hold.
  Usage UsageOf(uid_t uid) const;
  Usage Total() const;

 private:
  friend class Charge;
  void Give(uid_t uid, const Usage& amount);

  const UserLimitsConfig config_;
  mutable fgds::Mutex mu_;
  // Users holding anything (entries at zero are erased).
  absl::flat_hash_map<uid_t, Usage> users_ ABSL_GUARDED_BY(mu_);
  Usage total_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_USER_LIMITS_H_
