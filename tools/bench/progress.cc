#include "tools/bench/progress.h"

#include <cstdio>

#include "tools/bench/stats.h"

namespace fgds::bench {

Progress::Progress(bool enabled) : enabled_(enabled) {}

Progress::~Progress() { End(); }

void Progress::Begin(std::string label, uint64_t total_bytes,
                     std::string when_done) {
  End();
  if (!enabled_) return;
  label_ = std::move(label);
  when_done_ = std::move(when_done);
  total_ = total_bytes;
  done_.store(0, std::memory_order_relaxed);
  start_ns_ = MonotonicNanos();
  {
    fgds::MutexLock lock(&mu_);
    stop_ = false;
  }
  ticker_ = std::thread([this] { Ticker(); });
}

void Progress::End() {
  if (!ticker_.joinable()) return;
  {
    fgds::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  ticker_.join();
  std::fputs("\r\033[K", stderr);  // erase the line
  std::fflush(stderr);
}

void Progress::Draw() {
  const uint64_t done = done_.load(std::memory_order_relaxed);
  const double seconds =
      static_cast<double>(MonotonicNanos() - start_ns_) / 1e9;
  const double percent = total_ == 0 ? 0
                                     : 100.0 * static_cast<double>(done) /
                                           static_cast<double>(total_);
  const double rate =
      seconds > 0 ? static_cast<double>(done) / 1e9 / seconds : 0;
  std::fprintf(stderr, "\r\033[K%s  %.2f/%.2f GB  %3.0f%%  %.2f GB/s  %s",
               label_.c_str(), static_cast<double>(done) / 1e9,
               static_cast<double>(total_) / 1e9, percent, rate,
               done >= total_ ? when_done_.c_str() : "");
  std::fflush(stderr);
}

void Progress::Ticker() {
  fgds::MutexLock lock(&mu_);
  while (!stop_) {
    // Draw reads only done_ and fields that Begin set before starting this
    // thread, so holding mu_ while drawing costs nothing.
    Draw();
    cv_.WaitWithTimeout(&mu_, absl::Milliseconds(250));
  }
}

}  // namespace fgds::bench
