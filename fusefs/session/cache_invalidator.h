// File: fusefs/session/cache_invalidator.h
//
// CacheInvalidator: keeps the mount's page cache coherent with usrbio
// writes, which go straight into the backing file, behind the kernel's back.
// One primitive, used twice around every such write (ring.cc):
//
//   1. Before the write starts (when the mount may hold dirty pages, see
//      the constructor): invalidate its range. The kernel writes the range's
//      dirty pages back first (as FUSE WRITEs, which the daemon serves and
//      completes before the invalidation returns) and then drops them. A
//      page dirtied through the mount before the usrbio write (a write with
//      a writeback cache, a store through a shared mapping) thus reaches the
//      backing file before the usrbio bytes, not after them: the kernel
//      writes pages back whole, so a dirty page left behind would bring its
//      old copy of the usrbio range back over the new bytes at the next
//      invalidation, fsync or writeback.
//   2. The write runs.
//   3. After it: invalidate the range again, which drops what readers of
//      the mount brought in meanwhile (the old bytes).
//   4. Only then is the write's completion posted, so that a reader of the
//      mount (read or mmap) sees the new bytes as soon as the writer has
//      its completion.
//
// A write through the mount that overlaps a usrbio write in time may dirty
// the range between 1 and 3; 3 then writes its page back over the usrbio
// bytes. The two writes were concurrent, so either order is right; but the
// page goes back whole, with the kernel's old copy of the bytes that POSIX
// write did not touch, so usrbio bytes next to a concurrent partial-page
// write may revert too (as on any page-cached network filesystem).
//
// The invalidation (fuse_lowlevel_notify_inval_inode) may wait in the
// kernel for page locks that in-flight FUSE reads hold, and for the FUSE
// WRITEs of step 1, so it never runs on an engine worker that those reads
// and writes need, nor on a FUSE loop thread (which serves them). Step 3
// runs on this class's own thread (it follows a completion, which arrives
// on an engine worker); ranges queued while a call runs are merged, one
// call per file per round. Step 1 runs on the ring's worker thread
// (InvalidateNow), which nothing the kernel waits for depends on: it
// stalls that ring's batch alone, and saves two thread hops per batch.
//
// Thread safety: Invalidate and Flush from any thread (never from a `done`
// callback for Flush).
#ifndef FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_
#define FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_

#include <cstdint>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::session {

class CacheInvalidator {
 public:
  // `invalidate(node, offset, len)` writes back and drops the cached pages
  // of that range (len > 0) of the mount's node. It has nothing to report:
  // the kernel answers only ENOENT (a node it does not cache, so nothing to
  // drop) or a gone connection (no reader left), and does not say when it
  // failed to drop a page.
  using InvalidateFn =
      std::function<void(uint64_t node, uint64_t offset, uint64_t len)>;
  struct Range {
    uint64_t node;
    uint64_t offset;
    uint64_t len;
  };

  // `may_hold_dirty_pages`: whether the mount's page cache can hold pages
  // the kernel has yet to write back, so that writes need step 1 above.
  // It can with a writeback cache, and through shared writable mappings in
  // every mode but direct I/O (FOPEN_DIRECT_IO files refuse MAP_SHARED
  // unless the daemon asks for FUSE_DIRECT_IO_ALLOW_MMAP, which it does
  // not; their MAP_PRIVATE mappings hold clean pages only, which step 3
  // drops).
  // `shares_backing_cache(node)`: whether the mount's open files of
  // `node` use the backing file's page cache themselves (FUSE passthrough,
  // fusefs/passthrough.h); empty: never.
  using SharesBackingCacheFn = std::function<bool(uint64_t node)>;
  CacheInvalidator(InvalidateFn invalidate, bool may_hold_dirty_pages,
                   SharesBackingCacheFn shares_backing_cache = {});
  // Runs what is queued, then stops.
  ~CacheInvalidator();
  CacheInvalidator(const CacheInvalidator&) = delete;
  CacheInvalidator& operator=(const CacheInvalidator&) = delete;

  // Whether writes must wait for an invalidation of their range before
  // they start (step 1).
  bool may_hold_dirty_pages() const { return may_hold_dirty_pages_; }

  // Whether host-memory writes to `node` must go through the backing
  // file's page cache: when the mount's files of it share that cache
  // (passthrough), their writers and mappings dirty its pages directly,
  // and an O_DIRECT write racing them fails the cache's invalidation (the
  // backing filesystem then reports EIO at the file's next fsync). Through
  // the one cache, every writer sees every write at once.
  bool SharesBackingCache(uint64_t node) const {
    return shares_backing_cache_ && shares_backing_cache_(node);
  }

  // Queues `ranges` (all in one round); `done` runs (on this class's
  // thread) once their cached pages are written back and gone (at once, on
  // the caller's thread, when `ranges` is empty).
  void Invalidate(std::span<const Range> ranges, std::function<void()> done);
  // The same for one range.
  void Invalidate(uint64_t node, uint64_t offset, uint64_t len,
                  std::function<void()> done);

  // Step 1 in the calling thread: writes back and drops the ranges' cached
  // pages (one call per node, over the span of its ranges) and returns.
  // Loop's rounds go through it too.
  // Never from an engine worker or a FUSE loop thread (see above).
  void InvalidateNow(std::span<const Range> ranges);

  // Returns once everything queued before the call has run, `done`
  // callbacks included (what those queue in turn may still be pending).
  // For shutdown: after the last ring stopped, so that no write still
  // waits here to be handed to an engine that is about to go.
  void Flush();

 private:
  struct Pending {
    Range range;
    std::function<void()> done;  // may be empty
  };
  void Loop();

  const InvalidateFn invalidate_;
  const bool may_hold_dirty_pages_;
  const SharesBackingCacheFn shares_backing_cache_;
  fgds::Mutex mu_;
  fgds::CondVar work_;
  fgds::CondVar flushed_;
  std::vector<Pending> queue_ ABSL_GUARDED_BY(mu_);
  // Entries queued, and entries run (done included), since the start.
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_CACHE_INVALIDATOR_H_
