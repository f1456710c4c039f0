// File: fusefs/session/ring.h
//
// Ring: the daemon's side of one ior. A worker thread consumes the
// submission queue, validates each entry (sqe_check.h), hands the valid ones
// to the backend's IoEngine as one batch and posts a completion per entry.
//
// Batching: the worker starts I/O once io_depth entries wait, or once the
// oldest has waited timeout_us; it never waits for more entries without a
// deadline. It takes no more entries than the completion queue has room for,
// counting I/O in flight, so completions never overwrite unreaped ones.
//
// Wakeups: the worker sleeps on the submit eventfd with NEED_WAKEUP set (an
// optional spin first); completions are posted on engine threads, which
// only touch daemon-private state and memory; the client's completion
// eventfd is written by the worker alone. A client can make its eventfds
// block (they are its objects), and then only its own worker waits, never
// an engine thread that serves everyone.
//
// Lifetime: each batch of I/O in flight holds a shared_ptr to the Ring (and
// to the iovs and files it uses), so Stop() returns at once and the mapping
// and descriptors go away when the last completion is posted.
//
// Thread safety: Start/Stop from the owning session thread; the rest is
// internal.
#ifndef FGDS_FUSEFS_SESSION_RING_H_
#define FGDS_FUSEFS_SESSION_RING_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "backend/io_aliases.h"
#include "common/mutex.h"
#include "common/spin_lock.h"
#include "fgds/usrbio_ring.h"
#include "fgds/usrbio_wire.h"
#include "fusefs/session/cache_invalidator.h"
#include "fusefs/session/io_stats.h"
#include "fusefs/session/registry.h"

namespace fgds::session {

class Ring : public std::enable_shared_from_this<Ring> {
 public:
  // Checks the header the client wrote against the layout `params.entries`
  // gives (magic, version, entry sizes, counts, offsets) and takes the
  // eventfds (owned from here on, also on failure). `memory` is the mapped
  // ring memfd. Returns 0 or -EINVAL.
  static int Create(std::shared_ptr<SharedMemory> memory, int submit_efd,
                    int complete_efd, const fgds_msg_ior_register& params,
                    std::shared_ptr<Registry> registry,
                    backend::IoEngine* engine, CacheInvalidator* invalidator,
                    IoStats* stats, std::shared_ptr<Ring>* out);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  void Start();
  // Stops the worker and joins it. I/O in flight completes later.
  void Stop();

  // Posts one completion; called on engine threads and by the worker.
  void Post(uint64_t userdata, uint32_t tag, int64_t result, uint32_t path);
  // Writes' completions wait for this (null: none); see cache_invalidator.h.
  CacheInvalidator* invalidator() const { return invalidator_; }
  // Counts each completed entry (null: no counting).
  IoStats* stats() const { return stats_; }
  // `count` engine requests of this ring finished (after their Posts).
  void Retire(uint32_t count);

 private:
  Ring(std::shared_ptr<SharedMemory> memory, const fgds_ring_layout& layout,
       int submit_efd, int complete_efd, int wake_efd, int exited_efd,
       const fgds_msg_ior_register& params, std::shared_ptr<Registry> registry,
       backend::IoEngine* engine, CacheInvalidator* invalidator,
       IoStats* stats);

  void WorkerLoop();
  // CQ slots neither unreaped nor promised to I/O in flight.
  uint32_t Room() const;
  // Takes `count` entries: copy, validate, submit.
  void Dispatch(uint32_t count);
  // Writes the client's completion eventfd if completions were posted since
  // the last call and a client thread waits (or polls the fd).
  void DeliverNotify();
  // Sleeps until a submit, a completion to deliver, Stop, or `deadline_ns`
  // (0: none). `seen_tail` is the sq_tail the caller acted on.
  void Sleep(uint64_t deadline_ns, uint32_t seen_tail);

  const std::shared_ptr<SharedMemory> memory_;
  fgds_ring_header* const header_;
  const fgds_sqe* const sqes_;
  fgds_cqe* const cqes_;
  const uint32_t sq_entries_;
  const uint32_t cq_entries_;
  const int submit_efd_;    // client's; we read it
  const int complete_efd_;  // client's; only the worker writes it
  const int wake_efd_;      // ours: engine threads wake the worker
  const int exited_efd_;    // ours: the worker says it has left its loop
  const uint32_t flags_;
  const uint32_t io_depth_;
  const uint64_t timeout_ns_;
  const uint64_t spin_ns_;
  const int32_t priority_;
  const std::shared_ptr<Registry> registry_;
  backend::IoEngine* const engine_;
  CacheInvalidator* const invalidator_;  // may be null
  IoStats* const stats_;                 // may be null

  uint32_t sq_head_ = 0;  // worker only
  // Dispatch's scratch space, kept between calls (worker only).
  struct Failed {
    uint64_t userdata;
    uint32_t tag;
    int err;
  };
  std::vector<fgds_sqe> sqe_copies_;
  std::vector<backend::IoRequest> requests_;
  std::vector<Failed> failed_;
  fgds::SpinLock cq_mu_;  // orders posts from many engine threads
  uint32_t cq_tail_ ABSL_GUARDED_BY(cq_mu_) = 0;
  std::atomic<uint32_t> inflight_{0};
  std::atomic<bool> notify_pending_{false};
  std::atomic<bool> sleeping_{false};
  // The worker waits for CQ room (not for submissions): Retire wakes it.
  std::atomic<bool> starved_{false};
  std::atomic<bool> stop_{false};
  std::thread worker_;
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_RING_H_
