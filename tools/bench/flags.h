// File: tools/bench/flags.h
//
// Command line of `fgds bench`, parsed once into BenchOptions. Parsing is
// pure (no file system access) so that every rejection is unit-tested;
// checks that need the file system live in preflight.h.
#ifndef FGDS_TOOLS_BENCH_FLAGS_H_
#define FGDS_TOOLS_BENCH_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgds::bench {

enum class Pattern { kSeq, kRand };
enum class CacheMode { kCold, kWarm, kBoth };

absl::string_view PatternName(Pattern pattern);
absl::string_view CacheModeName(CacheMode cache);

struct BenchOptions {
  // --mount: a path on the fgds mount (the mountpoint or a directory below
  // it). Required.
  std::string mount;
  // --backing: the directory that --mount serves. Required.
  std::string backing;
  // --size: bytes per mode, split evenly across the threads.
  uint64_t size = uint64_t{4} << 30;
  // --bs: bytes per I/O call.
  uint64_t block_size = uint64_t{1} << 20;
  // --qd: in-flight requests per thread for the queued (io_uring) modes.
  int queue_depth = 32;
  // --threads: each thread works on its own contiguous region of the file.
  int threads = 1;
  Pattern pattern = Pattern::kSeq;
  CacheMode cache = CacheMode::kCold;
  // --modes: names from the mode table (mode.h), run in this order.
  std::vector<std::string> modes = {"posix", "native", "native-direct"};
  // --json: also write the rows here. Empty: no JSON.
  std::string json_path;
  // Cleared by the hidden --no-mount-check, which lets the bench run with
  // --mount pointing at a plain directory while developing the bench itself.
  bool mount_check = true;
  // --help / -h: print usage and exit; nothing else is validated.
  bool help = false;
};

// ParseSize parses "4096", "4k", "256M", "4G", "1T", "64KiB", "1MB"
// (suffixes are powers of 1024, case-insensitive). Rejects zero, fractions,
// signs and values that overflow 64 bits.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text);

// FormatSize is the inverse for display: the largest exact suffix
// ("1M", "4K", "3G"), else plain bytes ("1000").
std::string FormatSize(uint64_t bytes);

// ParseBenchFlags parses the arguments after "bench". Accepts "--flag value"
// and "--flag=value". Every error message names the offending flag.
absl::StatusOr<BenchOptions> ParseBenchFlags(
    const std::vector<std::string>& args);

// RegionBytes is what each thread reads and writes: --size split across
// --threads, rounded down to whole blocks.
uint64_t RegionBytes(const BenchOptions& options);

// BenchUsage is the --help text.
std::string BenchUsage();

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_FLAGS_H_
