// File: fusefs/session/cache_invalidator.h
//
// CacheInvalidator: drops the mount's cached pages of file ranges that
// usrbio wrote straight into the backing file, behind the kernel's back,
// so that a POSIX reader of the mount sees the new bytes as soon as the
// writer sees its completion (the ring posts a write's completion only
// after its range is invalidated).
//
// The invalidation (fuse_lowlevel_notify_inval_inode) may wait in the
// kernel for page locks that in-flight FUSE reads hold, so it runs on this
// class's own thread, never on an engine worker that those reads need.
// Ranges queued while a call runs are merged: one call per file per round.
//
// Thread safety: Invalidate from any thread.
#ifndef FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_
#define FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::session {

class CacheInvalidator {
 public:
  // `invalidate(node, offset, len)` drops the cached pages of that range of
  // the mount's node (errors are the kernel's business: a node it does not
  // cache has nothing to drop).
  using InvalidateFn =
      std::function<void(uint64_t node, uint64_t offset, uint64_t len)>;
  explicit CacheInvalidator(InvalidateFn invalidate);
  // Runs what is queued, then stops.
  ~CacheInvalidator();
  CacheInvalidator(const CacheInvalidator&) = delete;
  CacheInvalidator& operator=(const CacheInvalidator&) = delete;

  // Queues [offset, offset + len) of `node`; `done` runs (on this class's
  // thread) once the range's cached pages are gone.
  void Invalidate(uint64_t node, uint64_t offset, uint64_t len,
                  std::function<void()> done);

 private:
  struct Pending {
    uint64_t node;
    uint64_t offset;
    uint64_t end;
    std::function<void()> done;
  };
  void Loop();

  const InvalidateFn invalidate_;
  fgds::Mutex mu_;
  fgds::CondVar work_;
  std::vector<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_
