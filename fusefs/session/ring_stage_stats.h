// File: fusefs/session/ring_stage_stats.h
//
// RingStageStats: where a usrbio entry's time goes on the daemon's side,
// for /.fgds/stats (after the IoStats table) and the device bench
// (tests/device/usrbio_bench.sh reads it before and after a run and prints
// nanoseconds per entry). Cumulative counters, one "ring.<name> <value>"
// line each, so a script takes differences.
//
// What is timed, and where (ring.cc):
//   take_ns      the ring worker copying SQEs out of shared memory and
//                checking them (registry lock, CheckSqe), batch allocation;
//   submit_ns    the worker inside Backend::SubmitIo: reads served inline
//                (their copies), planning and hand-off for the rest;
//   post_ns      writing CQEs (Ring::Post, on whichever thread completes),
//                timed for one post in kPostSample and scaled;
//   notify_ns    the worker writing clients' completion eventfds;
//   engine_ns    for entries that went to the engine, from SubmitIo to
//                their Post: queueing, the io_uring copy or read, and the
//                engine's wakeups (wall time, sampled like post_ns).
// Counts: entries and batches dispatched, entries completed inline,
// notifies (eventfd writes), wakeups (a sleeping ring served again after a
// kick or a completion wake), helped (entries taken by a worker helping a
// busy ring it does not own: Ring::Help).
//
// Cost: two clock reads per stage per batch on the worker, a few relaxed
// adds per batch; per entry only a thread-local counter (the sampled
// posts). Recording is sharded like IoStats (no shared cache line between
// workers). Thread safety: any thread.
#ifndef FGDS_FUSEFS_SESSION_RING_STAGE_STATS_H_
#define FGDS_FUSEFS_SESSION_RING_STAGE_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace fgds::session {

class RingStageStats {
 public:
  enum Counter : uint8_t {
    kEntries,
    kBatches,
    kInline,
    kNotifies,
    kWakeups,
    kTakeNs,
    kSubmitNs,
    kPostNs,
    kNotifyNs,
    kEngineNs,
    kEngineSamples,
    kHelped,
    kCount
  };
  // One post (and one engine latency) in this many is timed.
  static constexpr uint32_t kPostSample = 16;

  void Add(Counter counter, uint64_t value) {
    Mine().values[counter].fetch_add(value, std::memory_order_relaxed);
  }
  uint64_t Get(Counter counter) const;
  // "ring.<name> <value>" per counter, in enum order.
  std::string Render() const;

 private:
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, kCount> values{};
  };
  Shard& Mine();
  std::array<Shard, kShards> shards_;
};

// A clock read cheap enough for the hot path (vDSO): MonotonicNs's clock.
uint64_t StageNowNs();

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_RING_STAGE_STATS_H_
