// File: tools/bench/workers.h
//
// The threading half shared by all engines: start `threads` workers, let
// each prepare untimed, release them together, time the phase from release
// to the last worker's end and merge their statistics. An engine supplies
// only the per-thread I/O loop (a PhaseWorker).
#ifndef FGDS_TOOLS_BENCH_WORKERS_H_
#define FGDS_TOOLS_BENCH_WORKERS_H_

#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/bench/mode.h"
#include "tools/bench/stats.h"

namespace fgds::bench {

// StopFlag tells workers to give up early: on SIGINT or when another worker
// failed. Polled between I/Os, so a stop takes at most one I/O per worker.
class StopFlag {
 public:
  explicit StopFlag(const std::atomic<bool>* interrupted)
      : interrupted_(interrupted) {}
  bool interrupted() const {
    return interrupted_ != nullptr &&
           interrupted_->load(std::memory_order_relaxed);
  }
  bool requested() const {
    return interrupted() || failed_.load(std::memory_order_relaxed);
  }
  void Fail() { failed_.store(true, std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* interrupted_;
  std::atomic<bool> failed_{false};
};

// What one worker measured.
struct WorkerStats {
  LatencyHistogram latency;
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t io_done_ns = 0;    // MonotonicNanos() after the last I/O
  uint64_t sync_done_ns = 0;  // after the fsync; io_done_ns for reads
};

// One thread's share of a phase.
class PhaseWorker {
 public:
  virtual ~PhaseWorker() = default;
  // Untimed setup: open the file, allocate and fill buffers, build the
  // block order.
  virtual absl::Status Prepare() = 0;
  // The timed I/O loop. Polls `stop` between I/Os and returns
  // absl::CancelledError once it is set. Must fill every field of `stats`.
  virtual absl::Status Run(const StopFlag& stop, WorkerStats& stats) = 0;

  // RunWorkers's side of IoDone: the phase's latch (write phases only),
  // and the arrival of a worker that never reached IoDone (it failed, or
  // its engine has no fsync), so that nobody waits for it.
  void SetWritesDoneLatch(std::latch* latch) { writes_done_ = latch; }
  void ArriveAtWritesDone() {
    if (writes_done_ != nullptr && !arrived_) {
      arrived_ = true;
      writes_done_->count_down();
    }
  }

 protected:
  // IoDone records the end of the worker's last I/O; in a write phase it
  // then waits until every worker has written, before the worker's fsync.
  // So the "write-nofsync" row times the writes alone, and no worker's
  // fsync overlaps another's writes: through FUSE an fsync holds the
  // file's inode lock, which every passthrough write takes, for the whole
  // FSYNC request (docs/fgdsd.md), so an early finisher's fsync would stall
  // the others and the row would time that instead of the writes.
  void IoDone(WorkerStats& stats) {
    stats.io_done_ns = MonotonicNanos();
    ArriveAtWritesDone();
    if (writes_done_ != nullptr) writes_done_->wait();
  }

 private:
  std::latch* writes_done_ = nullptr;
  bool arrived_ = false;
};

// RunWorkers runs spec.threads workers made by `make(index)` and returns the
// merged result. Fails with the first worker error (stopping the others), or
// Cancelled when interrupted.
absl::StatusOr<PhaseResult> RunWorkers(
    const PhaseSpec& spec,
    absl::FunctionRef<std::unique_ptr<PhaseWorker>(int index)> make);

// FinishQueuedIo checks one completed block I/O of a queued engine
// (io_uring, usrbio) named `engine`: `result` is bytes or -errno, a whole
// block must have moved, and a read must hold what the write phase wrote.
// Records the I/O in `stats` when it is good.
absl::Status FinishQueuedIo(const PhaseSpec& spec, absl::string_view engine,
                            const void* buf, uint64_t offset, uint64_t start_ns,
                            int64_t result, WorkerStats& stats);

// PosixError turns an errno from `what` (e.g. "pread /x") into a Status.
absl::Status PosixError(absl::string_view what, int error_number);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_WORKERS_H_
