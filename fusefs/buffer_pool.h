// File: fusefs/buffer_pool.h
//
// BufferPool hands out page-aligned buffers of one size for read replies, so
// a 1 MiB read does not mmap, fault in and munmap a fresh buffer each time
// (glibc serves such sizes with mmap). At most `max_cached` idle buffers are
// kept; beyond that, buffers are freed.
//
// Thread safety: thread-safe.
#ifndef FGDS_FUSEFS_BUFFER_POOL_H_
#define FGDS_FUSEFS_BUFFER_POOL_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::fusefs {

class BufferPool {
 public:
  BufferPool(size_t buffer_size, size_t max_cached);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_size() bytes. Throws std::bad_alloc when out of
  // memory. Give it back with Put.
  char* Get();
  void Put(char* buffer);
  size_t buffer_size() const { return buffer_size_; }

 private:
  const size_t buffer_size_;
  const size_t max_cached_;
  fgds::Mutex mu_;
  std::vector<char*> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_BUFFER_POOL_H_
