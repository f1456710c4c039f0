// File: tools/bench/result_row.h
//
// One line of the result table (and one object of the JSON output), and
// the ratio of each row to its baseline.
#ifndef FGDS_TOOLS_BENCH_RESULT_ROW_H_
#define FGDS_TOOLS_BENCH_RESULT_ROW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "tools/bench/daemon_cpu.h"

namespace fgds::bench {

struct ResultRow {
  std::string mode;     // "posix", "native", ...
  std::string op;       // "write", "write-nofsync" or "read"
  std::string pattern;  // "seq" or "rand"
  uint64_t block_size = 0;
  int threads = 1;
  int queue_depth = 1;
  // What the read really saw: "cold", "warm", "direct" (no page cache) or
  // "-" for writes. "warm" also when cold was asked for but the page cache
  // could not be dropped.
  std::string cache;
  // What was asked for ("cold", "warm", "-"): rows are paired with their
  // baseline on this, so a failed drop does not break the pairing.
  std::string cache_wanted;
  uint64_t bytes = 0;
  uint64_t ops = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double p50_us = 0;
  double p99_us = 0;
  // CPU the daemon serving --mount used during the phase, by thread kind
  // (daemon_cpu.h); valid false when it could not be read.
  DaemonCpu daemon_cpu;
  // This row's GB/s divided by its baseline's; unset for baselines and when
  // the baseline mode was not run.
  std::optional<double> ratio;
  std::string baseline;  // the mode `ratio` is relative to

  double gb_per_second() const;
  double iops() const;
  double cpu_seconds_per_gb() const;
  // Daemon CPU nanoseconds per operation (all threads, or one kind); 0
  // without a valid sample.
  double daemon_ns_per_op(uint64_t ns) const;
};

// AttachRatios sets `ratio` and `baseline` on every row whose mode has a
// baseline (`baseline_of(mode)` not empty) from the baseline's row with the
// same op, pattern, block size and threads and the same cache_wanted; a
// baseline row that bypasses the cache (cache "direct") pairs with any
// cache_wanted.
void AttachRatios(
    std::vector<ResultRow>& rows,
    absl::FunctionRef<absl::string_view(absl::string_view mode)> baseline_of);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_RESULT_ROW_H_
