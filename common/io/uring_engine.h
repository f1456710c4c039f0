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

  std::vector<std::unique_ptr<UringWorker>> workers_;
  PlanLimits limits_;
  std::atomic<unsigned> next_worker_{0};
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_URING_ENGINE_H_
