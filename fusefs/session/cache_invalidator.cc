#include "fusefs/session/cache_invalidator.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace fgds::session {

CacheInvalidator::CacheInvalidator(InvalidateFn invalidate,
                                   bool may_hold_dirty_pages)
    : invalidate_(std::move(invalidate)),
      may_hold_dirty_pages_(may_hold_dirty_pages),
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
      const Range& r = ranges[i];
      queue_.push_back(
          {r.node, r.offset, r.offset + r.len,
           i + 1 == ranges.size() ? std::move(done) : std::function<void()>()});
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
  // Usually one file: merge per node as Loop does, without a map.
  absl::InlinedVector<Range, 4> spans;
  for (const Range& r : ranges) {
    auto it = std::find_if(spans.begin(), spans.end(),
                           [&](const Range& s) { return s.node == r.node; });
    if (it == spans.end()) {
      spans.push_back(r);
      continue;
    }
    const uint64_t end = std::max(it->offset + it->len, r.offset + r.len);
    it->offset = std::min(it->offset, r.offset);
    it->len = end - it->offset;
  }
  for (const Range& s : spans) invalidate_(s.node, s.offset, s.len);
}

void CacheInvalidator::Flush() {
  fgds::MutexLock lock(&mu_);
  const uint64_t target = queued_;
  while (finished_ < target) flushed_.Wait(&mu_);
}

void CacheInvalidator::Loop() {
  std::vector<Pending> round;
  absl::flat_hash_map<uint64_t, std::pair<uint64_t, uint64_t>> ranges;
  for (;;) {
    {
      fgds::MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) work_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and nothing left
      round.swap(queue_);
    }
    // One call per node over the span of its ranges: dropping a few pages
    // too many costs a re-read, a call per write costs a system call each.
    for (const Pending& p : round) {
      auto [it, added] = ranges.try_emplace(p.node, p.offset, p.end);
      if (!added) {
        it->second.first = std::min(it->second.first, p.offset);
        it->second.second = std::max(it->second.second, p.end);
      }
    }
    for (const auto& [node, range] : ranges) {
      invalidate_(node, range.first, range.second - range.first);
    }
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
