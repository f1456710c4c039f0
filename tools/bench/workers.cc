#include "tools/bench/workers.h"

#include <algorithm>
#include <latch>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/block_order.h"
#include "tools/bench/progress.h"

namespace fgds::bench {

absl::Status PosixError(absl::string_view what, int error_number) {
  return absl::ErrnoToStatus(error_number, what);
}

absl::StatusOr<PhaseResult> RunWorkers(
    const PhaseSpec& spec,
    absl::FunctionRef<std::unique_ptr<PhaseWorker>(int index)> make) {
  const int n = spec.threads;
  std::vector<std::unique_ptr<PhaseWorker>> workers;
  for (int i = 0; i < n; ++i) workers.push_back(make(i));

  StopFlag stop(spec.interrupted);
  std::latch writes_done(n);
  if (spec.op == Op::kWrite) {
    for (auto& worker : workers) worker->SetWritesDoneLatch(&writes_done);
  }
  std::vector<WorkerStats> stats(n);
  std::vector<absl::Status> errors(n);
  // Workers prepare in parallel, then all start together: the clock must
  // not include one thread's setup while another is already doing I/O.
  std::latch prepared(n);
  std::latch go(1);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      absl::Status status = workers[i]->Prepare();
      if (!status.ok()) stop.Fail();
      prepared.count_down();
      go.wait();
      if (status.ok()) {
        status = stop.requested() ? absl::CancelledError("stopped")
                                  : workers[i]->Run(stop, stats[i]);
      }
      if (!status.ok()) stop.Fail();
      workers[i]->ArriveAtWritesDone();
      errors[i] = std::move(status);
    });
  }
  prepared.wait();
  const double cpu_start = ProcessCpuSeconds();
  const uint64_t start_ns = MonotonicNanos();
  go.count_down();
  for (std::thread& t : threads) t.join();
  const double cpu_end = ProcessCpuSeconds();
  workers.clear();  // close files outside the timed window

  if (stop.interrupted()) return absl::CancelledError("interrupted");
  // Report the root cause, not the Cancelled of the workers it stopped.
  for (int i = 0; i < n; ++i) {
    if (!errors[i].ok() && !absl::IsCancelled(errors[i])) {
      return absl::Status(errors[i].code(), absl::StrCat("thread ", i, ": ",
                                                         errors[i].message()));
    }
  }
  for (const absl::Status& error : errors) {
    if (!error.ok()) return error;
  }

  PhaseResult result;
  uint64_t io_end_ns = start_ns;
  uint64_t sync_end_ns = start_ns;
  for (const WorkerStats& s : stats) {
    result.bytes += s.bytes;
    result.ops += s.ops;
    result.latency.Merge(s.latency);
    io_end_ns = std::max(io_end_ns, s.io_done_ns);
    sync_end_ns = std::max(sync_end_ns, s.sync_done_ns);
  }
  result.seconds = static_cast<double>(sync_end_ns - start_ns) / 1e9;
  result.seconds_without_sync = static_cast<double>(io_end_ns - start_ns) / 1e9;
  result.cpu_seconds = cpu_end - cpu_start;
  return result;
}

absl::Status FinishQueuedIo(const PhaseSpec& spec, absl::string_view engine,
                            const void* buf, uint64_t offset, uint64_t start_ns,
                            int64_t result, WorkerStats& stats) {
  const char* verb = spec.op == Op::kWrite ? "write" : "read";
  if (result < 0) {
    return PosixError(
        absl::StrFormat("%s %s %s at %d", engine, verb, spec.path, offset),
        static_cast<int>(-result));
  }
  // Whole aligned blocks inside the file do not come back short; if one
  // does, the remainder would be misaligned anyway.
  if (static_cast<uint64_t>(result) != spec.block_size) {
    return absl::DataLossError(absl::StrFormat("%s %s %s at %d: %d of %d bytes",
                                               engine, verb, spec.path, offset,
                                               result, spec.block_size));
  }
  if (spec.op == Op::kRead &&
      !CheckBlock(buf, spec.block_size, offset, spec.data_tag)) {
    return absl::DataLossError(absl::StrFormat(
        "%s: block at offset %d does not hold what the write phase wrote",
        spec.path, offset));
  }
  stats.latency.Record(MonotonicNanos() - start_ns);
  ++stats.ops;
  stats.bytes += spec.block_size;
  if (spec.progress != nullptr) spec.progress->Add(spec.block_size);
  return absl::OkStatus();
}

}  // namespace fgds::bench
