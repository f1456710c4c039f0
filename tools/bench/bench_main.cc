// BenchMain: parse, check the directories, run, print. Everything that
// measures lives behind RunBench.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/bench/bench.h"
#include "tools/bench/flags.h"
#include "tools/bench/json.h"
#include "tools/bench/mode.h"
#include "tools/bench/progress.h"
#include "tools/bench/runner.h"
#include "tools/bench/system.h"
#include "tools/bench/table.h"

namespace fgds::bench {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

void PrintError(absl::string_view message) {
  std::fprintf(stderr, "fgds bench: %.*s\n", static_cast<int>(message.size()),
               message.data());
}

std::string Header(const BenchOptions& options) {
  return absl::StrFormat(
      "fgds bench: modes %s, size %s, bs %s, threads %d, qd %d, pattern %s, "
      "cache %s\n  mount %s%s, backing %s\n\n",
      absl::StrJoin(options.modes, ","), FormatSize(options.size),
      FormatSize(options.block_size), options.threads, options.queue_depth,
      PatternName(options.pattern), CacheModeName(options.cache), options.mount,
      options.mount_check ? "" : " (not checked for FUSE)", options.backing);
}

// The legend says what the derived columns mean, from the mode table, so
// it stays true when modes are added.
std::string Legend() {
  std::string pairs;
  for (const ModeSpec& mode : AllModes()) {
    if (!mode.baseline.empty()) {
      absl::StrAppend(&pairs, pairs.empty() ? "" : ", ", mode.name, " vs ",
                      mode.baseline);
    }
  }
  return absl::StrCat(
      "\nGB/s = 1e9 bytes/s. write includes the final fsync, write-nofsync "
      "stops at the last write (no fsync starts before it).\np50/p99: per-I/O "
      "latency. CPU s/GB: user+sys "
      "of this process only (not the fgds daemon).\nvs base: GB/s over the "
      "baseline row with the same op and cache (",
      pairs, ").\n");
}

absl::Status WriteJson(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("--json ", path, ": could not write the file"));
  }
  return absl::OkStatus();
}

}  // namespace

int BenchMain(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  absl::StatusOr<BenchOptions> parsed = ParseBenchFlags(args);
  if (!parsed.ok()) {
    PrintError(parsed.status().message());
    std::fputs("Run 'fgds bench --help' for usage.\n", stderr);
    return kExitUsage;
  }
  const BenchOptions& options = *parsed;
  if (options.help) {
    std::fputs(BenchUsage().c_str(), stdout);
    return 0;
  }
  // The posix file lands in --backing too, but each mode's file is removed
  // before the next mode starts, so one --size at a time is enough.
  const uint64_t bytes_needed = RegionBytes(options) * options.threads;
  for (absl::Status status : {CheckMountDir(options.mount, options.mount_check),
                              CheckBackingDir(options.backing, bytes_needed)}) {
    if (!status.ok()) {
      PrintError(status.message());
      return kExitUsage;
    }
  }

  // Fail now rather than after a long run that has nowhere to go.
  if (!options.json_path.empty()) {
    const std::string dir =
        std::filesystem::path(options.json_path).parent_path().string();
    if (access(dir.empty() ? "." : dir.c_str(), W_OK) != 0) {
      PrintError(absl::StrCat("--json ", options.json_path, ": ",
                              std::strerror(errno)));
      return kExitUsage;
    }
  }

  std::fputs(Header(options).c_str(), stdout);
  std::fflush(stdout);
  ScopedInterruptHandler interrupt;
  Progress progress(isatty(STDERR_FILENO) != 0);
  RunReport report;
  const absl::Status status =
      RunBench(options, interrupt.flag(), progress, report);

  if (!report.rows.empty())
    std::fputs(FormatTable(report.rows).c_str(), stdout);
  for (const std::string& note : report.notes) {
    std::printf("note: %s\n", note.c_str());
  }
  if (!report.rows.empty()) std::fputs(Legend().c_str(), stdout);
  std::fflush(stdout);

  if (interrupt.interrupted()) {
    PrintError("interrupted; removed the bench files");
    return 128 + interrupt.signal_number();
  }
  if (!status.ok()) {
    PrintError(status.message());
    return kExitFailure;
  }
  if (!options.json_path.empty()) {
    absl::Status written = WriteJson(
        options.json_path, FormatJson(options, report.rows, report.notes));
    if (!written.ok()) {
      PrintError(written.message());
      return kExitFailure;
    }
  }
  return 0;
}

}  // namespace fgds::bench
