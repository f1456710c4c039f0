// File: tools/bench/progress.h
//
// A one-line progress indicator on stderr for long phases. Disabled unless
// stderr is a terminal, so logs and pipes get no carriage-return noise.
#ifndef FGDS_TOOLS_BENCH_PROGRESS_H_
#define FGDS_TOOLS_BENCH_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::bench {

// Thread safety: Add() may be called from any thread; Begin() and End()
// from the thread that owns the Progress, alternately.
class Progress {
 public:
  // Enabled when `enabled` (callers pass isatty(STDERR_FILENO)).
  explicit Progress(bool enabled);
  ~Progress();  // calls End()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Begin starts redrawing "label  done/total  percent  rate" a few times a
  // second until End(); once all bytes are done, `when_done` is appended
  // (e.g. "waiting for fsync"), so a long fsync does not look like a hang.
  void Begin(std::string label, uint64_t total_bytes,
             std::string when_done = "");
  void Add(uint64_t bytes) {
    done_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // End stops redrawing and erases the line.
  void End();

 private:
  void Draw();
  void Ticker();

  const bool enabled_;
  std::string label_;
  std::string when_done_;
  uint64_t total_ = 0;
  uint64_t start_ns_ = 0;
  std::atomic<uint64_t> done_{0};
  std::thread ticker_;
  fgds::Mutex mu_;
  fgds::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_PROGRESS_H_
