#include "tools/bench/stats.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace fgds::bench {
namespace {

// Each power of two [2^m, 2^(m+1)) for m >= kSubBits+1 is split into
// 2^kSubBits equal buckets; values below kExactLimit get a bucket each.
constexpr int kSubBits = 6;
constexpr int kSubBuckets = 1 << kSubBits;
constexpr uint64_t kExactLimit = uint64_t{2} << kSubBits;  // 128
constexpr int kFirstLogMsb = kSubBits + 1;                 // msb of 128
constexpr int kNumBuckets =
    static_cast<int>(kExactLimit) + (64 - kFirstLogMsb) * kSubBuckets;

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kNumBuckets, 0) {}

int LatencyHistogram::BucketOf(uint64_t nanos) {
  if (nanos < kExactLimit) return static_cast<int>(nanos);
  const int msb = 63 - std::countl_zero(nanos);
  const int shift = msb - kSubBits;
  // (nanos >> shift) is in [kSubBuckets, 2 * kSubBuckets).
  const int sub = static_cast<int>(nanos >> shift) - kSubBuckets;
  return static_cast<int>(kExactLimit) + (msb - kFirstLogMsb) * kSubBuckets +
         sub;
}

uint64_t LatencyHistogram::BucketUpperBound(int bucket) {
  if (bucket < static_cast<int>(kExactLimit)) return bucket;
  const int log_index = bucket - static_cast<int>(kExactLimit);
  const int msb = kFirstLogMsb + log_index / kSubBuckets;
  const int sub = log_index % kSubBuckets;
  const int shift = msb - kSubBits;
  const uint64_t next = static_cast<uint64_t>(kSubBuckets + sub + 1) << shift;
  return next - 1;  // wraps to UINT64_MAX for the very last bucket, as wanted
}

void LatencyHistogram::Record(uint64_t nanos) {
  ++counts_[BucketOf(nanos)];
  ++count_;
  max_ = std::max(max_, nanos);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kNumBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

uint64_t LatencyHistogram::Percentile(double fraction) const {
  if (count_ == 0) return 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  // The rank of the sample we want, 1-based; at least the first sample.
  uint64_t rank =
      static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(BucketUpperBound(i), max_);
  }
  return max_;  // unreachable: the counts sum to count_
}

uint64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) +
           static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace fgds::bench
