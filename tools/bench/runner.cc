#include "tools/bench/runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/daemon_cpu.h"
#include "tools/bench/mode.h"
#include "tools/bench/system.h"
#include "tools/bench/workers.h"

namespace fgds::bench {
namespace {

// BenchFiles removes every file the bench created when it goes out of
// scope, whatever path the run took out of RunBench.
class BenchFiles {
 public:
  BenchFiles() = default;
  ~BenchFiles() {
    for (const std::string& path : paths_) unlink(path.c_str());
  }
  BenchFiles(const BenchFiles&) = delete;
  BenchFiles& operator=(const BenchFiles&) = delete;

  // CreateEmpty creates or truncates `path` once, before the workers open
  // it: a truncation by one worker would race with another's writes.
  absl::Status CreateEmpty(const std::string& path) {
    paths_.insert(path);
    const int fd =
        open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(absl::StrCat("create ", path), errno);
    close(fd);
    return absl::OkStatus();
  }

  // Remove deletes `path` now, so the next mode has the space.
  void Remove(const std::string& path) {
    unlink(path.c_str());
    paths_.erase(path);
  }

 private:
  std::set<std::string> paths_;
};

std::string MountFileName() { return absl::StrCat("fgds-bench.", getpid()); }
std::string BackingFileName() {
  return absl::StrCat("fgds-bench-native.", getpid());
}

class Runner {
 public:
  Runner(const BenchOptions& options, const std::atomic<bool>& interrupted,
         Progress& progress, RunReport& report)
      : options_(options),
        interrupted_(interrupted),
        progress_(progress),
        report_(report),
        // Differs between runs, so blocks left over by an earlier run in a
        // reused file can never pass the read check.
        run_tag_((static_cast<uint64_t>(getpid()) << 32) ^ MonotonicNanos()),
        daemon_pid_(DaemonPidOfMount(options.mount)) {}

  absl::Status Run() {
    for (const std::string& name : options_.modes) {
      const ModeSpec* mode = FindMode(name);
      if (absl::Status status = RunMode(*mode); !status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status RunMode(const ModeSpec& mode) {
    const std::string path =
        mode.location == FileLocation::kMount
            ? absl::StrCat(options_.mount, "/", MountFileName())
            : absl::StrCat(options_.backing, "/", BackingFileName());
    if (absl::Status s = files_.CreateEmpty(path); !s.ok()) return s;

    PhaseSpec spec;
    spec.path = path;
    spec.pattern = options_.pattern;
    spec.block_size = options_.block_size;
    spec.region_bytes = RegionBytes(options_);
    spec.threads = options_.threads;
    spec.queue_depth = mode.uses_queue_depth ? options_.queue_depth : 1;
    spec.data_tag = run_tag_ + (++modes_run_);
    spec.progress = &progress_;
    spec.interrupted = &interrupted_;

    spec.op = Op::kWrite;
    const DaemonCpu cpu_before = SampleDaemonCpu(daemon_pid_, options_.mount);
    absl::StatusOr<PhaseResult> written = RunPhase(mode, spec, "write");
    if (!written.ok()) return written.status();
    const DaemonCpu cpu =
        SampleDaemonCpu(daemon_pid_, options_.mount) - cpu_before;
    const char* write_cache = mode.bypasses_page_cache ? "direct" : "-";
    AddRow(mode, spec, "write", write_cache, "-", *written, written->seconds,
           cpu);
    AddRow(mode, spec, "write-nofsync", write_cache, "-", *written,
           written->seconds_without_sync, cpu);
    if (mode.location == FileLocation::kMount) CheckLanded(path);

    spec.op = Op::kRead;
    if (absl::Status s = RunReads(mode, spec); !s.ok()) return s;
    files_.Remove(path);
    return absl::OkStatus();
  }

  // RunReads runs the read phases that --cache asks for, on the file the
  // write phase left.
  absl::Status RunReads(const ModeSpec& mode, const PhaseSpec& spec) {
    if (mode.bypasses_page_cache) {
      return TimedRead(mode, spec, "direct", "direct");
    }
    const bool cold = options_.cache != CacheMode::kWarm;
    const bool warm = options_.cache != CacheMode::kCold;
    if (cold) {
      const char* seen = DropCache() ? "cold" : "warm";
      if (absl::Status s = TimedRead(mode, spec, seen, "cold"); !s.ok()) {
        return s;
      }
    } else {
      // Warm alone: one untimed pass makes sure every block is cached,
      // whatever the write phase left there (a FUSE mount may cache none).
      absl::StatusOr<PhaseResult> primed =
          RunPhase(mode, spec, "read (warming the cache)");
      if (!primed.ok()) return primed.status();
    }
    return warm ? TimedRead(mode, spec, "warm", "warm") : absl::OkStatus();
  }

  absl::StatusOr<PhaseResult> RunPhase(const ModeSpec& mode,
                                       const PhaseSpec& spec,
                                       absl::string_view what) {
    progress_.Begin(
        absl::StrCat(mode.name, " ", what, " ", PatternName(spec.pattern)),
        spec.region_bytes * spec.threads,
        spec.op == Op::kWrite ? "waiting for fsync" : "");
    absl::StatusOr<PhaseResult> result = mode.run_phase(spec);
    progress_.End();
    if (!result.ok() && !absl::IsCancelled(result.status())) {
      return absl::Status(
          result.status().code(),
          absl::StrCat(mode.name, " ", what, ": ", result.status().message()));
    }
    return result;
  }

  absl::Status TimedRead(const ModeSpec& mode, const PhaseSpec& spec,
                         const char* cache_seen, const char* cache_wanted) {
    const DaemonCpu cpu_before = SampleDaemonCpu(daemon_pid_, options_.mount);
    absl::StatusOr<PhaseResult> read = RunPhase(mode, spec, "read");
    if (!read.ok()) return read.status();
    AddRow(mode, spec, "read", cache_seen, cache_wanted, *read, read->seconds,
           SampleDaemonCpu(daemon_pid_, options_.mount) - cpu_before);
    return absl::OkStatus();
  }

  // DropCache returns whether the page cache was dropped; the first failure
  // becomes a note, since every later cold row is then really warm.
  bool DropCache() {
    absl::Status status = DropPageCache();
    if (!status.ok() && !drop_failure_noted_) {
      drop_failure_noted_ = true;
      report_.notes.push_back(absl::StrCat(
          "could not drop the page cache (", status.message(),
          "): the reads meant to be cold (the first read row of each mode) ran "
          "warm and say cache warm"));
    }
    return status.ok();
  }

  // A file written through --mount should appear in --backing; if it does
  // not, posix and its baseline may be on different devices.
  void CheckLanded(const std::string& mount_path) {
    if (!options_.mount_check) return;
    const std::string backing_path =
        absl::StrCat(options_.backing, "/", MountFileName());
    struct stat via_mount;
    struct stat in_backing;
    if (stat(mount_path.c_str(), &via_mount) == 0 &&
        stat(backing_path.c_str(), &in_backing) == 0 &&
        via_mount.st_size == in_backing.st_size) {
      return;
    }
    report_.notes.push_back(absl::StrFormat(
        "%s did not appear with the same size as %s: --mount may not serve "
        "--backing, so ratios may compare different devices",
        mount_path, backing_path));
  }

  void AddRow(const ModeSpec& mode, const PhaseSpec& spec, const char* op,
              const char* cache, const char* cache_wanted,
              const PhaseResult& result, double seconds,
              const DaemonCpu& daemon_cpu) {
    ResultRow row;
    row.daemon_cpu = daemon_cpu;
    row.mode = std::string(mode.name);
    row.op = op;
    row.pattern = std::string(PatternName(spec.pattern));
    row.block_size = spec.block_size;
    row.threads = spec.threads;
    row.queue_depth = spec.queue_depth;
    row.cache = cache;
    row.cache_wanted = cache_wanted;
    row.bytes = result.bytes;
    row.ops = result.ops;
    row.seconds = seconds;
    row.cpu_seconds = result.cpu_seconds;
    row.p50_us = static_cast<double>(result.latency.Percentile(0.50)) / 1e3;
    row.p99_us = static_cast<double>(result.latency.Percentile(0.99)) / 1e3;
    report_.rows.push_back(std::move(row));
  }

  const BenchOptions& options_;
  const std::atomic<bool>& interrupted_;
  Progress& progress_;
  RunReport& report_;
  const uint64_t run_tag_;
  // The daemon serving --mount, whose CPU each row reports (-1: unknown).
  const int daemon_pid_;
  int modes_run_ = 0;
  bool drop_failure_noted_ = false;
  BenchFiles files_;  // last member: files go before anything else is torn down
};

}  // namespace

absl::Status RunBench(const BenchOptions& options,
                      const std::atomic<bool>& interrupted, Progress& progress,
                      RunReport& report) {
  absl::Status status;
  {
    Runner runner(options, interrupted, progress, report);
    status = runner.Run();
  }  // the runner's files are gone here
  AttachRatios(report.rows, [](absl::string_view mode) -> absl::string_view {
    const ModeSpec* spec = FindMode(mode);
    return spec == nullptr ? absl::string_view() : spec->baseline;
  });
  return status;
}

}  // namespace fgds::bench
