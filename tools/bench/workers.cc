#include "tools/bench/workers.h"

#include <algorithm>
#include <latch>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

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

}  // namespace fgds::bench
