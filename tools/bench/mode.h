// File: tools/bench/mode.h
//
// The mode table: each `--modes` name is one ModeSpec row saying where its
// file lives, which mode it is compared against and which engine runs a
// phase. The runner (runner.h) only walks this table, so a new mode (usrbio,
// GPU reads) is a new engine file plus one row in modes.cc.
#ifndef FGDS_TOOLS_BENCH_MODE_H_
#define FGDS_TOOLS_BENCH_MODE_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/bench/flags.h"
#include "tools/bench/stats.h"

namespace fgds::bench {

class Progress;

enum class Op { kWrite, kRead };

// Where a mode's file lives.
enum class FileLocation {
  kMount,    // <mount>/fgds-bench.<pid>: through the fgds mount
  kBacking,  // <backing>/fgds-bench-native.<pid>: the backing fs directly
};

// PhaseSpec describes one timed pass of `threads` workers over one file.
// Worker i covers bytes [i * region_bytes, (i + 1) * region_bytes).
struct PhaseSpec {
  std::string path;
  Op op = Op::kRead;
  Pattern pattern = Pattern::kSeq;
  uint64_t block_size = 0;
  uint64_t region_bytes = 0;  // a multiple of block_size
  int threads = 1;
  int queue_depth = 1;
  // Stamped into every written block and checked on every read, so a mount
  // that returns wrong data fails the bench instead of looking fast.
  uint64_t data_tag = 0;
  Progress* progress = nullptr;  // may be null
  // Set from the SIGINT handler; engines poll it between I/Os.
  const std::atomic<bool>* interrupted = nullptr;
};

struct PhaseResult {
  uint64_t bytes = 0;
  uint64_t ops = 0;
  // Start to the end of the last worker, including fsync for writes.
  double seconds = 0;
  // Start until the last write returned, excluding fsync; == seconds for
  // reads.
  double seconds_without_sync = 0;
  // User + system CPU of this process during the phase. The fgds daemon is
  // another process: its CPU is not included.
  double cpu_seconds = 0;
  LatencyHistogram latency;
};

// An engine runs one phase. The file exists (the runner created it empty
// before a write phase). Returns Cancelled when interrupted.
using PhaseFn = absl::StatusOr<PhaseResult> (*)(const PhaseSpec& spec);

struct ModeSpec {
  absl::string_view name;  // --modes name and table label
  absl::string_view help;  // one line for --help
  // Name of the mode this one's rows are divided by; empty for a baseline.
  absl::string_view baseline;
  FileLocation location;
  // Reads bypass the page cache (O_DIRECT), so cold and warm would be the
  // same measurement: it runs once and the row says cache "direct".
  bool bypasses_page_cache;
  // --bs must be a multiple of this (O_DIRECT needs logical-block alignment).
  uint64_t block_alignment;
  // Whether --qd means anything for this mode (else the table shows 1).
  bool uses_queue_depth;
  PhaseFn run_phase;
};

// AllModes is the table, in --help order.
std::span<const ModeSpec> AllModes();

// FindMode returns the row named `name`, or nullptr.
const ModeSpec* FindMode(absl::string_view name);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_MODE_H_
