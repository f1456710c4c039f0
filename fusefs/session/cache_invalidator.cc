#include "fusefs/session/cache_invalidator.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace fgds::session {

CacheInvalidator::CacheInvalidator(InvalidateFn invalidate)
    : invalidate_(std::move(invalidate)),
      thread_(&CacheInvalidator::Loop, this) {}

CacheInvalidator::~CacheInvalidator() {
  {
    fgds::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.SignalAll();
  thread_.join();
}

void CacheInvalidator::Invalidate(uint64_t node, uint64_t offset, uint64_t len,
                                  std::function<void()> done) {
  {
    fgds::MutexLock lock(&mu_);
    queue_.push_back({node, offset, offset + len, std::move(done)});
  }
  work_.Signal();
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
    for (Pending& p : round) p.done();
    round.clear();
    ranges.clear();
  }
}

}  // namespace fgds::session
