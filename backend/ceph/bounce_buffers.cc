#include "backend/ceph/bounce_buffers.h"

#include <utility>

namespace fgds::backend {

struct BounceBuffers::Pool {
  explicit Pool(size_t k) : keep(k) {}
  const size_t keep;
  mutable fgds::Mutex mu;
  std::vector<std::unique_ptr<char[]>> free ABSL_GUARDED_BY(mu);

  void Put(char* buffer) {
    std::unique_ptr<char[]> owned(buffer);
    fgds::MutexLock lock(&mu);
    if (free.size() < keep) free.push_back(std::move(owned));
    // else: freed as `owned` goes, after the lock (declared first).
  }
};

std::shared_ptr<BounceBuffers> BounceBuffers::Create(size_t keep) {
  return std::shared_ptr<BounceBuffers>(
      new BounceBuffers(std::make_shared<Pool>(keep)));
}

std::shared_ptr<char> BounceBuffers::Get(size_t len) {
  if (len > kPooledSize) {
    return std::shared_ptr<char>(new char[len], std::default_delete<char[]>());
  }
  std::unique_ptr<char[]> buffer;
  {
    fgds::MutexLock lock(&pool_->mu);
    if (!pool_->free.empty()) {
      buffer = std::move(pool_->free.back());
      pool_->free.pop_back();
    }
  }
  if (buffer == nullptr) buffer.reset(new char[kPooledSize]);
  // The deleter holds the pool, so a buffer dropped after the
  // BounceBuffers (a call that finished after the gate gave up) still
  // has somewhere to go.
  // (Should the control block's allocation throw, the deleter runs: the
  // buffer goes back to the pool.)
  return std::shared_ptr<char>(buffer.release(),
                               [pool = pool_](char* p) { pool->Put(p); });
}

size_t BounceBuffers::free_count() const {
  fgds::MutexLock lock(&pool_->mu);
  return pool_->free.size();
}

}  // namespace fgds::backend
