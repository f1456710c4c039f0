// File: usrbio/gpu/chunking.h
//
// How the GPU stager cuts a request into staging chunks. Chunk boundaries
// fall on 4096-aligned file offsets wherever the request allows it: every
// chunk but the first of a request that starts unaligned, and the last of
// one that ends unaligned, is then aligned in file offset and length, and
// lands at an aligned staging offset, so the daemon serves it O_DIRECT.
#ifndef FGDS_USRBIO_GPU_CHUNKING_H_
#define FGDS_USRBIO_GPU_CHUNKING_H_

#include <algorithm>
#include <cstdint>

namespace fgds::usrbio::gpu {

inline constexpr uint64_t kAlign = 4096;

// ChunkLength returns the length of the chunk that starts at `file_offset`
// with `remaining` (> 0) bytes of the request left. REQUIRES: chunk_bytes a
// nonzero multiple of kAlign. Never 0, never more than chunk_bytes.
inline uint64_t ChunkLength(uint64_t file_offset, uint64_t remaining,
                            uint64_t chunk_bytes) {
  // An unaligned start gives a shorter first chunk ending on a boundary.
  const uint64_t len = chunk_bytes - file_offset % kAlign;
  return std::min(len, remaining);
}

// ChunkCount returns how many chunks ChunkLength cuts a request into.
inline uint64_t ChunkCount(uint64_t file_offset, uint64_t len,
                           uint64_t chunk_bytes) {
  if (len == 0) return 0;
  const uint64_t first = ChunkLength(file_offset, len, chunk_bytes);
  return 1 + (len - first + chunk_bytes - 1) / chunk_bytes;
}

// RequestResult folds a request's chunk outcomes into its one completion,
// as pread/pwrite would report them: the length of the prefix that moved
// completely; -errno when the very first byte failed. Chunks may finish in
// any order.
class RequestResult {
 public:
  explicit RequestResult(uint64_t len) : limit_(len) {}

  // Chunk [offset, offset + len) moved `result` bytes (short only at EOF)
  // or failed with -errno.
  void AddChunk(uint64_t offset, uint64_t len, int64_t result) {
    if (result >= 0 && static_cast<uint64_t>(result) >= len) return;
    const uint64_t end =
        offset + (result > 0 ? static_cast<uint64_t>(result) : 0);
    if (end < limit_ || (end == limit_ && result < 0 && error_ == 0)) {
      limit_ = end;
      error_ = result < 0 ? static_cast<int>(result) : 0;
    }
  }
  // Fail makes the whole request fail with `error` (a freed buffer: no
  // prefix of it can be trusted).
  void Fail(int error) {
    if (fatal_ == 0) fatal_ = error;
  }
  // Whether bytes at `offset` and beyond can still count.
  bool Wanted(uint64_t offset) const { return fatal_ == 0 && offset < limit_; }
  int64_t Value() const {
    if (fatal_ != 0) return fatal_;
    if (limit_ == 0 && error_ != 0) return error_;
    return static_cast<int64_t>(limit_);
  }

 private:
  uint64_t limit_;  // bytes before the first short or failed chunk
  int error_ = 0;   // the failure at limit_, if it was an error
  int fatal_ = 0;
};

}  // namespace fgds::usrbio::gpu

#endif  // FGDS_USRBIO_GPU_CHUNKING_H_
