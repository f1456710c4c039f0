// File: common/io/uring_engine.h
//
// UringEngine: IoEngine on io_uring, as a pool of UringWorkers (one thread,
// one ring each; uring_worker.h). Submit plans each batch (io_plan.h:
// merge continuing requests, split long ones, spread the pieces over
// workers) and hands every worker its group; the pieces' results are
// combined back into one completion per request. A request that travels in
// one piece (no merge, no split) costs no allocation: its own IoCompletion
// carries it.
//
// Memory: Submit allocates what a batch needs (its plan; a tracker and
// pieces for each merged or split unit) before it hands any of it to a
// worker, and handing over never allocates (uring_worker.h). So a failed
// allocation never leaves a batch half started: the batch's requests all
// complete at once, on the calling thread, with -ENOMEM, and nothing throws.
// A completion can therefore run inside Submit, as with the inline engine.
//
// Thread safety: Submit is thread-safe and never blocks on I/O. Completions
// run on worker threads with no engine lock held, so a completion may
// Submit again. How much is queued is bounded by the callers (a usrbio ring
// by its completion queue, FUSE by its threads).
#ifndef FGDS_COMMON_IO_URING_ENGINE_H_
#define FGDS_COMMON_IO_URING_ENGINE_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/io_engine.h"
#include "common/io/io_plan.h"
#include "common/io/uring_worker.h"

namespace fgds::io {

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
  UringEngine() = default;
  // Makes `item` carry `piece` to a worker (IoCompletion::Transfer).
  static void Carry(IoCompletion* item, const PlannedPiece& piece);
  // Plans `batch` into the calling thread's plan and fills *items, one per
  // piece, allocating trackers and pieces for merged or split units. On
  // std::bad_alloc frees what it allocated and rethrows; nothing started.
  void Prepare(std::span<const IoRequest> batch, IoPlan* plan,
               std::vector<IoCompletion*>* items);

  // The system calls and the allocation hook (uring_os.h); never null.
  UringOs* os_ = nullptr;
  std::vector<std::unique_ptr<UringWorker>> workers_;
  PlanLimits limits_;
  std::atomic<unsigned> next_worker_{0};
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_URING_ENGINE_H_
