// File: fusefs/buffer_pool.h
//
// BufferPool hands out page-aligned buffers of one size for read replies and
// staged writes, so a 1 MiB read does not mmap, fault in and munmap a fresh
// buffer each time (glibc serves such sizes with mmap). At most `max_cached`
// idle buffers are kept; beyond that, buffers are freed.
//
// Out of memory, Get returns null rather than throwing: the handler fails
// its request with ENOMEM and the daemon goes on serving.
//
// Example:
//   PooledBuffer buffer(fs.read_buffers);
//   if (buffer.get() == nullptr) return -ENOMEM;
//
// Thread safety: thread-safe.
#ifndef FGDS_FUSEFS_BUFFER_POOL_H_
#define FGDS_FUSEFS_BUFFER_POOL_H_

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::fusefs {

class BufferPool {
 public:
  // Returns `size` bytes aligned to 4096 that std::free releases, or null.
  using Allocator = void* (*)(size_t size);
  // posix_memalign: page alignment keeps buffers usable for O_DIRECT I/O.
  static void* AlignedAlloc(size_t size) noexcept;
  static constexpr Allocator kAlignedAlloc = &AlignedAlloc;

  // `allocate` makes new buffers (tests inject failures through it).
  BufferPool(size_t buffer_size, size_t max_cached,
             Allocator allocate = kAlignedAlloc);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_size() bytes, or null when out of memory. Give it
  // back with Put.
  char* Get() noexcept;
  void Put(char* buffer) noexcept;
  size_t buffer_size() const { return buffer_size_; }

 private:
  const size_t buffer_size_;
  const size_t max_cached_;
  const Allocator allocate_;
  fgds::Mutex mu_;
  // Reserved to max_cached_ at construction: Put never allocates.
  std::vector<char*> free_ ABSL_GUARDED_BY(mu_);
};

// One buffer of a pool (null when the pool had none), given back on
// destruction.
class PooledBuffer {
 public:
  explicit PooledBuffer(BufferPool& pool) : pool_(pool), buffer_(pool.Get()) {}
  ~PooledBuffer() {
    if (buffer_ != nullptr) pool_.Put(buffer_);
  }
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  char* get() const { return buffer_; }

 private:
  BufferPool& pool_;
  char* const buffer_;
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_BUFFER_POOL_H_
