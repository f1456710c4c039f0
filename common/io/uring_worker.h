// File: common/io/uring_worker.h
//
// UringWorker: one thread that owns one io_uring, both its submission and
// its completion side, so nothing about the ring is shared or locked. Work
// arrives through a locked hand-off queue; the thread sleeps in
// io_uring_enter, woken by its I/O completing or by an eventfd poll armed
// in the same ring when new work is queued.
//
// Reads of page-cached data complete inside io_uring_enter, so a worker
// spends its time copying: several workers copy in parallel, which is what
// the engine's split and spread (io_plan.h) are for.
//
// Failures: every item handed over finishes exactly once. Entries the
// kernel refused at submission are taken back out of the submission queue
// and finish with the error (or their progress, if a short transfer came
// first); what the kernel took finishes through its completion, however long
// that takes, because the kernel writes its buffer until then. A failed wait
// falls back to poll(2) on the ring and the eventfd. Nothing retries without
// a bound, and an idle worker sleeps, whatever the OS layer (uring_os.h)
// returns.
//
// Memory: nothing on the worker's side allocates. Its queues (hand-off,
// backlog, finished) are intrusive lists threaded through the items
// themselves (IoCompletion::next_), so Enqueue and the worker thread cannot
// fail for want of memory: an allocation failure there would either end the
// process (an exception on the worker thread) or lose items already handed
// over (Enqueue called after others of the same batch went to other
// workers). What a batch needs is allocated in UringEngine::Submit before
// any of it is handed over (uring_engine.h).
#ifndef FGDS_COMMON_IO_URING_WORKER_H_
#define FGDS_COMMON_IO_URING_WORKER_H_

#include <liburing.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/io/io_engine.h"
#include "common/io/uring_os.h"
#include "common/mutex.h"

namespace fgds::io {

// A FIFO of items linked through IoCompletion::next_; never allocates. An
// item is in at most one list at a time.
class UringItemList {
 public:
  bool empty() const { return head_ == nullptr; }
  void PushBack(IoCompletion* item);
  void PushFront(IoCompletion* item);
  // The first item, unlinked; null when empty.
  IoCompletion* PopFront();
  // Moves every item of `other` to the end of this list.
  void Splice(UringItemList* other);

 private:
  IoCompletion* head_ = nullptr;
  IoCompletion* tail_ = nullptr;
};

class UringWorker {
 public:
  // `depth`: submission queue entries, and the most transfers in flight.
  // `spin_ns`: how long an idle worker polls for new work before it sleeps
  // (a wakeup costs the submitter a system call and the worker a context
  // switch; polling costs a CPU). `os`: the system calls (null: the real
  // ones); not owned, must outlive the worker.
  static absl::StatusOr<std::unique_ptr<UringWorker>> Create(
      unsigned depth, uint64_t spin_ns = 0, UringOs* os = nullptr);
  // Finishes everything queued and in flight, then stops the thread.
  ~UringWorker();
  UringWorker(const UringWorker&) = delete;
  UringWorker& operator=(const UringWorker&) = delete;

  // Hands `items` over (any thread): each carries its transfer
  // (IoCompletion::Transfer, done 0) and is completed once, on the worker's
  // thread, with the bytes moved (short only at end of file, or when an
  // error follows progress) or -errno. Short transfers, EAGAIN and EINTR
  // continue with the rest. Never allocates and never throws.
  void Enqueue(std::span<IoCompletion* const> items);

 private:
  UringWorker() = default;
  void Loop();
  // Takes the hand-off queue; false when stopping and nothing is left.
  bool TakeQueued();
  // Fills the submission queue from backlog_, up to depth_ in flight.
  void PrepBacklog();
  void PrepItem(io_uring_sqe* sqe, IoCompletion* item);
  // Moves `item` to finished_, to complete with `result`.
  void Finish(IoCompletion* item, int64_t result);
  void ArmWake();
  // Hands the submission queue to the kernel: 0 when it took every entry,
  // else why not (-errno; -EAGAIN when it took only some).
  int SubmitPrepared();
  // Entries prepared but not taken by the kernel, and how many are items
  // (not the wake poll).
  unsigned Unconsumed() const;
  unsigned UnconsumedItems() const;
  // Takes every entry the kernel did not take back out of the submission
  // queue; their items finish with `error`.
  void Withdraw(int error);
  // Polls for new work or completions for up to spin_ns_; true if found.
  bool Spin();
  // Sleeps until a completion, new work or stop is likely.
  void Sleep();
  // Moves ready completions into finished_ (or back to the backlog).
  void Reap();
  // The result an item finishes with when its last transfer got `res`.
  static int64_t ResultOf(const IoCompletion& item, int res);

  io_uring uring_;
  bool ring_initialized_ = false;
  UringOs* os_ = nullptr;
  int wake_efd_ = -1;
  unsigned depth_ = 0;
  uint64_t spin_ns_ = 0;
  std::thread thread_;

  fgds::Mutex mu_;
  UringItemList queue_ ABSL_GUARDED_BY(mu_);
  // The thread may be asleep: Enqueue and the destructor must signal.
  bool may_sleep_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // queue_ is not empty (a hint for Spin, read without the lock).
  std::atomic<bool> has_work_{false};

  // The worker thread's own.
  // Items not yet prepared, in order (the rest of a short transfer first).
  UringItemList backlog_;
  // Items done, their results in IoCompletion::result_.
  UringItemList finished_;
  // Items prepared and not finished: in the submission queue or the
  // kernel's.
  unsigned inflight_ = 0;
  // Of those, the ones still in the submission queue (the kernel refused
  // them with a transient error, and something it holds will complete).
  unsigned unconsumed_items_ = 0;
  // The wake poll is prepared (in the submission queue or the kernel's).
  bool wake_armed_ = false;
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_URING_WORKER_H_
