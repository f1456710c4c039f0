// File: backend/ceph/bounce_buffers.h
//
// BounceBuffers: the buffers a gated data call (guarded_backend.h) moves
// its bytes through, recycled. A call the gate gives up on may still
// write its buffer later, so each buffer is shared by the call and the
// waiter, and comes back only when the last of them lets go: a buffer
// held by a call parked forever is never handed out again. Recycling
// keeps a megabyte-sized allocation per request off the allocator (which
// may hand back fresh pages, each a fault and a zeroing, whenever it
// trims), and the buffers' pages warm.
//
// Buffers of up to kPooledSize bytes come from (and go back to) a free
// list of at most `keep` buffers; larger ones are allocated per call.
//
// Thread safety: Get from any thread; a buffer may be dropped on any
// thread, after the BounceBuffers is gone too.
#ifndef FGDS_BACKEND_CEPH_BOUNCE_BUFFERS_H_
#define FGDS_BACKEND_CEPH_BOUNCE_BUFFERS_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::backend {

class BounceBuffers {
 public:
  static constexpr size_t kPooledSize = size_t{1} << 20;

  // At most `keep` free buffers stay allocated.
  static std::shared_ptr<BounceBuffers> Create(size_t keep);

  // A buffer of at least `len` bytes (at least one byte), with unspecified
  // content. Throws std::bad_alloc.
  std::shared_ptr<char> Get(size_t len);

  size_t free_count() const;

 private:
  struct Pool;
  explicit BounceBuffers(std::shared_ptr<Pool> pool) : pool_(std::move(pool)) {}
  // Shared with every buffer out, which returns to it when dropped.
  const std::shared_ptr<Pool> pool_;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_BOUNCE_BUFFERS_H_
