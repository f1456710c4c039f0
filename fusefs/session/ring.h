// File: fusefs/session/ring.h
//
// Ring: the daemon's side of one ior. A worker of the RingWorkerPool
// (ring_worker_pool.h) serves it: consumes the submission queue, validates
// each entry (sqe_check.h), hands the valid ones to the backend as one
// batch (Backend::SubmitIo) and posts a completion per entry, with the path
// the backend took. The ring owns no thread.
//
// Batching: the worker starts I/O once io_depth entries wait, or once the
// oldest has waited timeout_us; it never waits for more entries without a
// deadline. A turn takes at most RingWorkerPoolOptions::max_batch entries.
// Reads of cached pages are copied by the worker itself, inside
// Backend::SubmitIo (backend::kIoInlineIfCached), and their completions
// posted and signalled before the turn ends; the rest go to the engine. It
// takes no more entries than the completion queue has room for, counting I/O in
// flight, so completions never overwrite unreaped ones.
//
// Wakeups: an idle ring sets NEED_WAKEUP and its worker sleeps on the
// client's submit eventfd (watched, never read) and the ring's own wake
// eventfd; completions are posted on engine threads, which only touch
// daemon-private state and memory; the client's completion eventfd is
// written by the worker alone, under a watch that undoes a write the client
// made block (client_eventfd.h). Spinning after a batch is bounded by the
// daemon (RingWorkerPoolOptions::max_spin_us), whatever the client asks.
//
// Helpers: a ring with more entries waiting than its worker takes in one
// turn asks the pool for help (RingWorkerPool::WantHelp); an idle worker
// then takes whole batches from it too (Help), so one busy client is served
// by several CPUs. Taking is under take_mu_ (the SQ head and the CQ room
// reserved for what is taken); validation, the copy and the posts run
// outside it, on each taker's own scratch space. The owner alone keeps the
// NEED_WAKEUP handshake, batching deadlines and spinning.
//
// Lifetime: each batch of I/O in flight holds a shared_ptr to the Ring (and
// to the iovs and files it uses), so Stop() returns at once and the mapping
// and descriptors go away when the last completion is posted.
//
// Thread safety: Start/Stop from the owning session's thread; Serve on the
// worker alone; Help on any worker; Post and Retire from any thread.
#ifndef FGDS_FUSEFS_SESSION_RING_H_
#define FGDS_FUSEFS_SESSION_RING_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "backend/backend.h"
#include "common/mutex.h"
#include "common/spin_lock.h"
#include "fgds/usrbio_ring.h"
#include "fgds/usrbio_wire.h"
#include "fusefs/session/cache_invalidator.h"
#include "fusefs/session/client_eventfd.h"
#include "fusefs/session/io_stats.h"
#include "fusefs/session/registry.h"
#include "fusefs/session/ring_worker_pool.h"

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
                    backend::Backend* backend, CacheInvalidator* invalidator,
                    IoStats* stats, std::shared_ptr<Ring>* out);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Hands the ring to a worker of `pool`, which serves it until Stop.
  // Returns 0, or -errno (the ring is then not served; destroy it).
  int Start(RingWorkerPool* pool);
  // Returns once no worker serves the ring (nor helps it). I/O in flight
  // completes later.
  void Stop();

  // What one turn of the worker (Serve) leaves the ring wanting.
  struct Turn {
    enum State {
      kAgain,   // more to do (or spinning): serve again next round
      kAsleep,  // NEED_WAKEUP is up: serve on a kick or a wake
      kUntil,   // as kAsleep, and at the latest at deadline_ns
    } state = kAsleep;
    uint64_t deadline_ns = 0;
  };
  // The worker's turn: delivers pending notifications and dispatches at
  // most one batch; never blocks but on a client's completion eventfd,
  // under `watch`. `now_ns` is MonotonicNs() of the worker's round.
  Turn Serve(EventfdWriteWatch* watch, uint64_t now_ns);
  // A helping worker's turn: takes one batch if at least a batch's worth
  // (io_depth, or 1) waits, dispatches it and notifies. False: nothing was
  // taken (the helper stops helping; HelpDone).
  bool Help(EventfdWriteWatch* watch);
  // A helper gave up: another may be asked for.
  void HelpDone() { helpers_asked_.fetch_sub(1, std::memory_order_acq_rel); }
  // What the worker watches: the client's submit eventfd (edge-triggered,
  // never read) and our own wake eventfd.
  int submit_efd() const { return submit_efd_; }
  int wake_efd() const { return wake_efd_; }

  // Posts one completion; called on engine threads and by the worker.
  void Post(uint64_t userdata, uint32_t tag, int64_t result, uint32_t path);
  // Posts `count` completions at once (one CQ lock, one notification): the
  // ones a batch served inline, on the dispatching thread.
  void PostMany(const fgds_cqe* cqes, uint32_t count);
  // Writes wait for this before they start (where the mount may hold dirty
  // pages) and their completions after they end (null: neither); see
  // cache_invalidator.h.
  CacheInvalidator* invalidator() const { return invalidator_; }
  // Counts each completed entry (null: no counting).
  IoStats* stats() const { return stats_; }
  // `count` engine requests of this ring finished (after their Posts).
  void Retire(uint32_t count);

 private:
  Ring(std::shared_ptr<SharedMemory> memory, const fgds_ring_layout& layout,
       int submit_efd, int complete_efd, int wake_efd,
       const fgds_msg_ior_register& params, std::shared_ptr<Registry> registry,
       backend::Backend* backend, CacheInvalidator* invalidator,
       IoStats* stats);

  // CQ slots neither unreaped nor promised to I/O in flight.
  uint32_t Room() const;
  // A taker's scratch space, kept between calls: the owner's is the
  // ring's, a helper's its thread's.
  struct Failed {
    uint64_t userdata;
    uint32_t tag;
    int err;
  };
  struct Scratch {
    // Sized for `entries` at the first use; false: out of memory.
    bool Reserve(uint32_t entries);
    std::vector<fgds_sqe> sqe_copies;
    std::vector<backend::FileIoRequest> requests;
    std::vector<Failed> failed;
  };
  // Takes at most `max` entries (and no more than the CQ has room for,
  // which it reserves in inflight_) into `scratch`, if at least `min_avail`
  // wait and the ring is not stopped. `helper`: counted in helpers_ until
  // the caller's EndHelp. Returns how many.
  uint32_t Take(uint32_t max, uint32_t min_avail, bool helper, Scratch* scratch,
                uint32_t* left = nullptr);
  // Validates and submits the `count` entries Take put in `scratch`.
  void Dispatch(Scratch* scratch, uint32_t count);
  // Takes at most `max` entries: Take, then Dispatch.
  void TakeAndDispatch(uint32_t max);
  // Before a turn that leaves `left` entries waiting: asks the pool for a
  // helper if that is half a batch's worth or more and fewer than
  // max_helpers help. Called by the owner and by helpers.
  void MaybeWantHelp(uint32_t left);
  // Writes the client's completion eventfd if completions were posted since
  // the last call and a client thread waits (or polls the fd).
  void DeliverNotify(EventfdWriteWatch* watch);
  // Raises NEED_WAKEUP, then re-checks for work (our half of the
  // handshakes in usrbio_ring.h). True: asleep, the flag stays up until the
  // next Serve; false: work came, the flag is down again. `seen_tail` is
  // the sq_tail the caller acted on.
  bool TrySleep(uint32_t seen_tail);
  // Whether anything arrived that Serve must act on.
  bool Woken(uint32_t seen_tail) const;
  // Completes `count` entries taken from the SQ with `err`.
  void FailAll(const Scratch& scratch, uint32_t count, int err);

  const std::shared_ptr<SharedMemory> memory_;
  fgds_ring_header* const header_;
  const fgds_sqe* const sqes_;
  fgds_cqe* const cqes_;
  const uint32_t sq_entries_;
  const uint32_t cq_entries_;
  const int submit_efd_;    // client's; watched, never read
  const int complete_efd_;  // client's; only the worker writes it
  const int wake_efd_;      // ours: engine threads wake the worker
  const uint32_t flags_;
  const uint32_t io_depth_;
  const uint64_t timeout_ns_;
  const uint64_t requested_spin_ns_;     // the client's; capped at Start
  uint64_t spin_ns_ = 0;                 // set by Start, before any Serve
  uint32_t max_batch_ = 1;               // set by Start: entries per turn
  bool inline_reads_ = true;             // set by Start
  RingWorkerPool* help_pool_ = nullptr;  // set by Start: asked for helpers
  uint32_t max_helpers_ = 0;             // set by Start
  const std::shared_ptr<Registry> registry_;
  backend::Backend* const backend_;
  CacheInvalidator* const invalidator_;  // may be null
  IoStats* const stats_;                 // may be null

  RingWorkerPool* pool_ = nullptr;  // while started
  // Changed under take_mu_ only; the owner reads it without (a stale value
  // only makes it try a take that finds less).
  std::atomic<uint32_t> sq_head_{0};
  fgds::SpinLock take_mu_;
  bool stopped_ ABSL_GUARDED_BY(take_mu_) = false;
  // Helpers between a take and the end of its dispatch; Stop waits for 0.
  std::atomic<uint32_t> helpers_{0};
  // Helpers asked for that have not given up yet (at most max_helpers_).
  std::atomic<uint32_t> helpers_asked_{0};
  uint64_t batch_start_ns_ = 0;    // worker only: oldest waiting entry
  uint64_t last_dispatch_ns_ = 0;  // worker only: spinning ends after
  // The client made a write of its completion eventfd block; it is never
  // written again.
  std::atomic<bool> notify_broken_{false};
  Scratch scratch_;       // the owner's
  fgds::SpinLock cq_mu_;  // orders posts from many engine threads
  uint32_t cq_tail_ ABSL_GUARDED_BY(cq_mu_) = 0;
  std::atomic<uint32_t> inflight_{0};
  std::atomic<bool> notify_pending_{false};
  std::atomic<bool> sleeping_{false};
  // The worker waits for CQ room (not for submissions): Retire wakes it.
  std::atomic<bool> starved_{false};
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_RING_H_
