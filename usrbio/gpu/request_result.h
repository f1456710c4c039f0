// File: usrbio/gpu/request_result.h
//
// How the GPU stager (stager.h) folds the outcomes of one request's chunks
// into its one completion. The chunks themselves are cut by the shared
// rule, common/io/chunking.h (Edges::kMerged: cuts on 4096-aligned file
// offsets, so every chunk but the first of a request that starts unaligned,
// and the last of one that ends unaligned, is aligned in file offset and
// length, lands at an aligned staging offset, and the daemon serves it
// O_DIRECT).
#ifndef FGDS_USRBIO_GPU_REQUEST_RESULT_H_
#define FGDS_USRBIO_GPU_REQUEST_RESULT_H_

#include <cstdint>

#include "common/io/chunking.h"

namespace fgds::usrbio::gpu {

// Chunk offsets, lengths and staging offsets are aligned to this.
inline constexpr uint64_t kAlign = io::kChunkAlignment;

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

#endif  // FGDS_USRBIO_GPU_REQUEST_RESULT_H_
