#include "fusefs/buffer_pool.h"

#include <cstdlib>

namespace fgds::fusefs {

void* BufferPool::AlignedAlloc(size_t size) noexcept {
  void* buffer = nullptr;
  return posix_memalign(&buffer, 4096, size) == 0 ? buffer : nullptr;
}

BufferPool::BufferPool(size_t buffer_size, size_t max_cached,
                       Allocator allocate)
    : buffer_size_(buffer_size), max_cached_(max_cached), allocate_(allocate) {
  MutexLock lock(&mu_);
  free_.reserve(max_cached_);
}

BufferPool::~BufferPool() {
  MutexLock lock(&mu_);
  for (char* buffer : free_) std::free(buffer);
}

char* BufferPool::Get() noexcept {
  {
    MutexLock lock(&mu_);
    if (!free_.empty()) {
      char* buffer = free_.back();
      free_.pop_back();
      return buffer;
    }
  }
  return static_cast<char*>(allocate_(buffer_size_));
}

void BufferPool::Put(char* buffer) noexcept {
  {
    MutexLock lock(&mu_);
    if (free_.size() < max_cached_) {
      free_.push_back(buffer);  // within the reserved capacity
      return;
    }
  }
  std::free(buffer);
}

}  // namespace fgds::fusefs
