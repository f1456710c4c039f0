// File: backend/uring_engine.h
//
// UringEngine: IoEngine on io_uring. Several rings, each with one reaper
// thread; submitters pick a ring round-robin and fill its submission queue
// under the ring's mutex, the reaper owns the completion queue. Short
// transfers are resubmitted for the remainder, so a completion reports the
// whole request.
//
// Thread safety: Submit is thread-safe. Completions run on reaper threads,
// never with an engine lock held, so a completion may Submit again.
#ifndef FGDS_BACKEND_URING_ENGINE_H_
#define FGDS_BACKEND_URING_ENGINE_H_

#include <liburing.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "backend/io_engine.h"
#include "common/mutex.h"

namespace fgds::backend {

class UringEngine : public IoEngine {
 public:
  // Fails (with the errno of io_uring_setup) where io_uring is unavailable.
  static absl::StatusOr<std::unique_ptr<UringEngine>> Create(
      const IoEngineOptions& options);
  // Waits for every request in flight to complete.
  ~UringEngine() override;

  void Submit(std::span<const IoRequest> batch) override;
  const char* name() const override { return "io_uring"; }

 private:
  struct Op {
    IoRequest request;
    size_t done = 0;  // bytes transferred so far
  };
  struct Ring {
    io_uring uring;
    fgds::Mutex mu;
    fgds::CondVar room;  // signalled when inflight drops
    // Requests submitted and not yet completed. Bounded by max_inflight so
    // the completion queue never overflows.
    unsigned inflight ABSL_GUARDED_BY(mu) = 0;
    unsigned max_inflight = 0;
    bool stopping ABSL_GUARDED_BY(mu) = false;
    std::thread reaper;
  };

  UringEngine() = default;
  // Puts `op`'s remaining range into the submission queue.
  static void QueueLocked(Ring& ring, Op* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(ring.mu);
  static void ReapLoop(Ring* ring);

  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<unsigned> next_ring_{0};
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_URING_ENGINE_H_
