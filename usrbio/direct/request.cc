#include "usrbio/direct/request.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fgds/fgds.h"

namespace fgds::direct {

Request::Request(RequestSpec spec, ChunkPlan plan,
                 std::function<void(const RequestOutcome&, Op)> on_done)
    : spec_(std::move(spec)),
      plan_(plan),
      on_done_(std::move(on_done)),
      short_at_(spec_.file_offset + spec_.size) {}

void Request::ChunkDone(const Chunk& chunk, int64_t result, uint32_t source,
                        const uint64_t bytes_by_source[3], bool direct) {
  if (result < 0) {
    fgds::MutexLock lock(&mu_);
    if (error_ == 0) error_ = static_cast<int>(result);
    failed_.store(true, std::memory_order_release);
  } else if (static_cast<uint64_t>(result) < chunk.length) {
    fgds::MutexLock lock(&mu_);
    short_at_ = std::min(short_at_, chunk.file_offset + result);
  }
  source_.fetch_or(source, std::memory_order_relaxed);
  uint64_t moved = 0;
  for (int i = 0; i < 3; ++i) {
    by_source_[i].fetch_add(bytes_by_source[i], std::memory_order_relaxed);
    moved += bytes_by_source[i];
  }
  if (direct) direct_bytes_.fetch_add(moved, std::memory_order_relaxed);
  // acq_rel: the completing thread must see every other chunk's writes
  // above (and their device copies, finished before ChunkDone).
  if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 ==
      plan_.chunk_count()) {
    Complete();
  }
}

void Request::CompleteEmpty() { Complete(); }

void Request::Complete() {
  {
    fgds::MutexLock lock(&mu_);
    outcome_.result = error_ != 0
                          ? error_
                          : static_cast<int64_t>(short_at_ - spec_.file_offset);
  }
  outcome_.source = source_.load(std::memory_order_relaxed);
  uint64_t moved = 0;
  for (int i = 0; i < 3; ++i) {
    outcome_.bytes_by_source[i] = by_source_[i].load(std::memory_order_relaxed);
    moved += outcome_.bytes_by_source[i];
  }
  outcome_.bytes_direct = direct_bytes_.load(std::memory_order_relaxed);
  // DIRECT only when no byte took the staging route.
  if (moved > 0 && outcome_.bytes_direct == moved) {
    outcome_.path = FGDS_GPU_PATH_DIRECT;
  } else if (moved > 0 || outcome_.result >= 0) {
    outcome_.path = FGDS_GPU_PATH_BOUNCE;
  } else {
    outcome_.path = FGDS_GPU_PATH_NONE;
  }
  if (spec_.size == 0) outcome_.path = FGDS_GPU_PATH_NONE;
  // Release the buffer's fence and the per-I/O file twins before anyone
  // learns of the completion: once fgds_pread returns, deregistering the
  // buffer must not wait for this request.
  spec_.direct = DirectTarget();
  spec_.pin.Reset();
  spec_.file.reset();
  if (on_done_) on_done_(outcome_, spec_.op);
  fgds::MutexLock lock(&mu_);
  done_ = true;
  finished_.SignalAll();
}

bool Request::Wait(int64_t timeout_us) {
  fgds::MutexLock lock(&mu_);
  if (timeout_us < 0) {
    while (!done_) finished_.Wait(&mu_);
    return true;
  }
  const absl::Time deadline = absl::Now() + absl::Microseconds(timeout_us);
  while (!done_) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    finished_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

}  // namespace fgds::direct
