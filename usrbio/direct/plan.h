// File: usrbio/direct/plan.h
//
// How one I/O is cut into chunks, the unit the engine pipelines (one disk
// read and one device copy each). Pure arithmetic, unit-tested.
//
//   file:  |head|   aligned chunk   |   aligned chunk   |...|tail|
//          ^offset                                            ^offset+size
//
// The head runs from `offset` to the first multiple of `alignment`, the
// tail from the last multiple to the end; both go through buffered I/O,
// since O_DIRECT needs aligned offsets and lengths. Everything between is
// cut into aligned chunks of at most `chunk_bytes`, for O_DIRECT. An I/O
// that never crosses an alignment boundary is one unaligned chunk. When
// O_DIRECT is impossible (a file system without it), every chunk is an
// unaligned one, still at most chunk_bytes.
#ifndef FGDS_USRBIO_DIRECT_PLAN_H_
#define FGDS_USRBIO_DIRECT_PLAN_H_

#include <cstdint>

namespace fgds::direct {

enum class ChunkKind : uint8_t {
  kAligned,    // O_DIRECT: offset and length multiples of the alignment
  kUnaligned,  // buffered
};

struct Chunk {
  uint64_t file_offset = 0;
  uint64_t length = 0;
  // Offset from the start of the I/O: in the device buffer and the file.
  uint64_t io_offset = 0;
  ChunkKind kind = ChunkKind::kUnaligned;
};

class IoPlan {
 public:
  // REQUIRES: alignment is a power of two, chunk_bytes a nonzero multiple
  // of it, offset + size does not overflow.
  IoPlan(uint64_t offset, uint64_t size, uint64_t alignment,
         uint64_t chunk_bytes, bool direct_possible);

  uint64_t chunk_count() const { return count_; }

  // chunk returns chunk `index` (0 <= index < chunk_count()), in file
  // order; O(1), so workers can take chunks by index.
  Chunk chunk(uint64_t index) const;

 private:
  uint64_t offset_;
  uint64_t chunk_bytes_;
  uint64_t head_ = 0;        // bytes before the aligned body
  uint64_t body_begin_ = 0;  // file offsets
  uint64_t body_end_ = 0;
  uint64_t tail_ = 0;  // bytes after it
  uint64_t body_chunks_ = 0;
  bool body_aligned_ = true;
  uint64_t count_ = 0;
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_PLAN_H_
