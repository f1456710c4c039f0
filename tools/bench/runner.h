// File: tools/bench/runner.h
//
// RunBench walks the selected rows of the mode table: for each mode a write
// phase, then the read phases the cache setting asks for, each turned into
// result rows. It knows nothing about how a mode does I/O.
#ifndef FGDS_TOOLS_BENCH_RUNNER_H_
#define FGDS_TOOLS_BENCH_RUNNER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/flags.h"
#include "tools/bench/progress.h"
#include "tools/bench/result_row.h"

namespace fgds::bench {

struct RunReport {
  std::vector<ResultRow> rows;     // in the order measured, ratios attached
  std::vector<std::string> notes;  // caveats to print under the table
};

// RunBench measures every mode in options.modes, in order. Each mode's file
// is created before its write phase and removed after its last read; all of
// them are removed before RunBench returns, on error or interrupt too.
// Rows measured before a failure stay in `report`. Returns Cancelled when
// `interrupted` was set.
//
// REQUIRES: options passed ParseBenchFlags, and the directories passed
// CheckMountDir / CheckBackingDir.
absl::Status RunBench(const BenchOptions& options,
                      const std::atomic<bool>& interrupted, Progress& progress,
                      RunReport& report);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_RUNNER_H_
