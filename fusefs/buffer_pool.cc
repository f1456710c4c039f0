#include "fusefs/buffer_pool.h"

#include <cstdlib>
#include <new>

namespace fgds::fusefs {

BufferPool::BufferPool(size_t buffer_size, size_t max_cached)
    : buffer_size_(buffer_size), max_cached_(max_cached) {}

BufferPool::~BufferPool() {
  MutexLock lock(&mu_);
  for (char* buffer : free_) std::free(buffer);
}

char* BufferPool::Get() {
  {
    MutexLock lock(&mu_);
    if (!free_.empty()) {
      char* buffer = free_.back();
      free_.pop_back();
      return buffer;
    }
  }
  void* buffer = nullptr;
  // Page alignment keeps the buffer usable for O_DIRECT I/O.
  if (posix_memalign(&buffer, 4096, buffer_size_) != 0) throw std::bad_alloc();
  return static_cast<char*>(buffer);
}

void BufferPool::Put(char* buffer) {
  {
    MutexLock lock(&mu_);
    if (free_.size() < max_cached_) {
      free_.push_back(buffer);
      return;
    }
  }
  std::free(buffer);
}

}  // namespace fgds::fusefs
