// File: tools/bench/stats.h
//
// Measurement primitives: a bounded-memory latency histogram, the
// monotonic clock and process CPU time.
#ifndef FGDS_TOOLS_BENCH_STATS_H_
#define FGDS_TOOLS_BENCH_STATS_H_

#include <cstdint>
#include <vector>

namespace fgds::bench {

// LatencyHistogram records per-operation latencies in nanoseconds.
//
// Log-linear buckets (64 per power of two, exact below 128 ns) keep any
// reported percentile within 1/64 (~1.6%) of the true sample while memory
// stays fixed (~30 KB) however many operations a run performs; a 4 KiB
// random run over many GiB would otherwise need gigabytes of samples.
//
// Thread safety: not thread-safe; each worker owns one and the results are
// merged after the workers have joined.
class LatencyHistogram {
 public:
  LatencyHistogram();

  void Record(uint64_t nanos);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }

  // Percentile returns the smallest bucket bound at or below which at least
  // `fraction` (0 < fraction <= 1) of the samples fall, capped at the
  // largest sample, so it never reports a latency longer than any seen.
  // Returns 0 when empty.
  uint64_t Percentile(double fraction) const;

 private:
  static int BucketOf(uint64_t nanos);
  static uint64_t BucketUpperBound(int bucket);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

// MonotonicNanos reads CLOCK_MONOTONIC: latencies and phase durations must
// not jump with wall-clock adjustments.
uint64_t MonotonicNanos();

// ProcessCpuSeconds is user + system time of all threads of this process
// (getrusage RUSAGE_SELF).
double ProcessCpuSeconds();

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_STATS_H_
