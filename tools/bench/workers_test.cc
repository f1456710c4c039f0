// Unit tests for RunWorkers's write barrier: in a write phase no worker
// passes IoDone (to its fsync) before every worker has written, a worker
// that fails first never leaves the others waiting, and read phases do not
// wait at all.
#include "tools/bench/workers.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::bench {
namespace {

// Stands in for an engine: "writes" by sleeping `delay`, then IoDone, then
// records when it got past it (where an engine would fsync).
class SleepyWorker : public PhaseWorker {
 public:
  SleepyWorker(std::chrono::milliseconds delay, bool fail,
               std::atomic<uint64_t>& last_io_done,
               std::atomic<uint64_t>& first_past_barrier)
      : delay_(delay),
        fail_(fail),
        last_io_done_(last_io_done),
        first_past_barrier_(first_past_barrier) {}

  absl::Status Prepare() override { return absl::OkStatus(); }

  absl::Status Run(const StopFlag&, WorkerStats& stats) override {
    std::this_thread::sleep_for(delay_);
    if (fail_) return absl::InternalError("write failed");
    IoDone(stats);
    uint64_t done = stats.io_done_ns;
    uint64_t seen = last_io_done_.load();
    while (seen < done && !last_io_done_.compare_exchange_weak(seen, done)) {
    }
    uint64_t past = MonotonicNanos();
    uint64_t first = first_past_barrier_.load();
    while (past < first &&
           !first_past_barrier_.compare_exchange_weak(first, past)) {
    }
    stats.sync_done_ns = MonotonicNanos();
    return absl::OkStatus();
  }

 private:
  const std::chrono::milliseconds delay_;
  const bool fail_;
  std::atomic<uint64_t>& last_io_done_;
  std::atomic<uint64_t>& first_past_barrier_;
};

struct Outcome {
  absl::StatusOr<PhaseResult> result;
  uint64_t last_io_done = 0;
  uint64_t first_past_barrier = 0;
};

// Worker 0 finishes at once, worker 2 after 100 ms; worker 1 fails at
// 50 ms when `one_fails`.
Outcome RunSleepy(Op op, bool one_fails) {
  PhaseSpec spec;
  spec.op = op;
  spec.threads = 3;
  std::atomic<uint64_t> last_io_done{0};
  std::atomic<uint64_t> first_past{UINT64_MAX};
  Outcome out{RunWorkers(spec,
                         [&](int i) -> std::unique_ptr<PhaseWorker> {
                           return std::make_unique<SleepyWorker>(
                               std::chrono::milliseconds(50 * i),
                               one_fails && i == 1, last_io_done, first_past);
                         }),
              0, 0};
  out.last_io_done = last_io_done.load();
  out.first_past_barrier = first_past.load();
  return out;
}

TEST(WritesDoneBarrierTest, NoWorkerPassesBeforeEveryWorkerWrote) {
  Outcome out = RunSleepy(Op::kWrite, /*one_fails=*/false);
  ASSERT_TRUE(out.result.ok()) << out.result.status();
  EXPECT_GE(out.first_past_barrier, out.last_io_done);
  // The row without fsync ends at the slowest worker's last write.
  EXPECT_GE(out.result->seconds_without_sync, 0.1);
  EXPECT_GE(out.result->seconds, out.result->seconds_without_sync);
}

TEST(WritesDoneBarrierTest, FailedWorkerDoesNotLeaveOthersWaiting) {
  // Would hang (and hit ctest's timeout) if the failed worker never
  // arrived.
  Outcome out = RunSleepy(Op::kWrite, /*one_fails=*/true);
  ASSERT_FALSE(out.result.ok());
  EXPECT_NE(out.result.status().message().find("write failed"),
            std::string::npos)
      << out.result.status();
}

TEST(WritesDoneBarrierTest, ReadsDoNotWait) {
  Outcome out = RunSleepy(Op::kRead, /*one_fails=*/false);
  ASSERT_TRUE(out.result.ok()) << out.result.status();
  // Worker 0 went on long before worker 2 finished.
  EXPECT_LT(out.first_past_barrier, out.last_io_done);
}

}  // namespace
}  // namespace fgds::bench
