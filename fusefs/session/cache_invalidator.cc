#include "fusefs/session/cache_invalidator.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace fgds::session {

CacheInvalidator::CacheInvalidator(InvalidateFn invalidate,
                                   bool may_hold_dirty_pages,
                                   SharesBackingCacheFn shares_backing_cache)
    : invalidate_(std::move(invalidate)),
      may_hold_dirty_pages_(may_hold_dirty_pages),
      shares_backing_cache_(std::move(shares_backing_cache)),
      thread_(&CacheInvalidator::Loop, this) {}

CacheInvalidator::~CacheInvalidator() {
  {
    fgds::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.SignalAll();
  thread_.join();
}

void CacheInvalidator::Invalidate(std::span<const Range> ranges,
                                  std::function<void()> done) {
  if (ranges.empty()) {
    if (done) done();
    return;
  }
  {
    fgds::MutexLock lock(&mu_);
    // Under one lock, so one round takes them all; the last entry carries
    // `done`, which the round runs after every call of the round.
    for (size_t i = 0; i < ranges.size(); ++i) {
      queue_.push_back({ranges[i], i + 1 == ranges.size()
                                       ? std::move(done)
                                       : std::function<void()>()});
    }
    queued_ += ranges.size();
  }
  work_.Signal();
}

void CacheInvalidator::Invalidate(uint64_t node, uint64_t offset, uint64_t len,
                                  std::function<void()> done) {
  const Range range = {node, offset, len};
  Invalidate(std::span(&range, 1), std::move(done));
}

void CacheInvalidator::InvalidateNow(std::span<const Range> ranges) {
  // One call per node over the span of its ranges: dropping a few pages
  // too many costs a re-read, a call per write costs a system call each.
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> spans;
  for (const Range& r : ranges) {
    auto [it, added] = spans.try_emplace(r.node, r.offset, r.offset + r.len);
    if (!added) {
      it->second.first = std::min(it->second.first, r.offset);
      it->second.second = std::max(it->second.second, r.offset + r.len);
    }
  }
  for (const auto& [node, span] : spans) {
    invalidate_(node, span.first, span.second - span.first);
  }
}

void CacheInvalidator::Flush() {
  fgds::MutexLock lock(&mu_);
  const uint64_t target = queued_;
  while (finished_ < target) flushed_.Wait(&mu_);
}

void CacheInvalidator::Loop() {
  std::vector<Pending> round;
  std::vector<Range> ranges;
  for (;;) {
    {
      fgds::MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) work_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and nothing left
      round.swap(queue_);
    }
    for (const Pending& p : round) ranges.push_back(p.range);
    InvalidateNow(ranges);
    for (Pending& p : round) {
      if (p.done) p.done();
    }
    {
      fgds::MutexLock lock(&mu_);
      finished_ += round.size();
    }
    flushed_.SignalAll();
    round.clear();
    ranges.clear();
  }
}

}  // namespace fgds::session
