#include "fusefs/session/ring_stage_stats.h"

#include <time.h>

#include "absl/strings/str_format.h"

namespace fgds::session {
namespace {

constexpr const char* kNames[RingStageStats::kCount] = {
    "entries",   "batches",   "inline",         "notifies",
    "wakeups",   "take_ns",   "submit_ns",      "post_ns",
    "notify_ns", "engine_ns", "engine_samples", "helped"};

}  // namespace

uint64_t StageNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

RingStageStats::Shard& RingStageStats::Mine() {
  static std::atomic<size_t> next_shard{0};
  thread_local const size_t shard =
      next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shards_[shard];
}

uint64_t RingStageStats::Get(Counter counter) const {
  uint64_t sum = 0;
  for (const Shard& shard : shards_) {
    sum += shard.values[counter].load(std::memory_order_relaxed);
  }
  return sum;
}

std::string RingStageStats::Render() const {
  std::string out;
  for (int c = 0; c < kCount; ++c) {
    absl::StrAppendFormat(&out, "ring.%s %u\n", kNames[c],
                          Get(static_cast<Counter>(c)));
  }
  return out;
}

}  // namespace fgds::session
