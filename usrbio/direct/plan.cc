#include "usrbio/direct/plan.h"

#include <algorithm>

namespace fgds::direct {

IoPlan::IoPlan(uint64_t offset, uint64_t size, uint64_t alignment,
               uint64_t chunk_bytes, bool direct_possible)
    : offset_(offset), chunk_bytes_(chunk_bytes) {
  if (size == 0) return;
  const uint64_t end = offset + size;
  const uint64_t mask = alignment - 1;
  const uint64_t first_boundary = (offset + mask) & ~mask;
  const uint64_t last_boundary = end & ~mask;
  if (!direct_possible || first_boundary >= last_boundary) {
    // No aligned body: the whole range is buffered, in chunk_bytes pieces
    // so that staging slots bound it like any other I/O.
    body_begin_ = offset;
    body_end_ = end;
    body_aligned_ = false;
  } else {
    head_ = first_boundary - offset;
    body_begin_ = first_boundary;
    body_end_ = last_boundary;
    tail_ = end - last_boundary;
  }
  body_chunks_ = (body_end_ - body_begin_ + chunk_bytes_ - 1) / chunk_bytes_;
  count_ = (head_ != 0 ? 1 : 0) + body_chunks_ + (tail_ != 0 ? 1 : 0);
}

Chunk IoPlan::chunk(uint64_t index) const {
  Chunk c;
  if (head_ != 0) {
    if (index == 0) {
      c.file_offset = offset_;
      c.length = head_;
      c.io_offset = 0;
      c.kind = ChunkKind::kUnaligned;
      return c;
    }
    --index;
  }
  if (index < body_chunks_) {
    c.file_offset = body_begin_ + index * chunk_bytes_;
    c.length = std::min(chunk_bytes_, body_end_ - c.file_offset);
    c.kind = body_aligned_ ? ChunkKind::kAligned : ChunkKind::kUnaligned;
  } else {
    c.file_offset = body_end_;
    c.length = tail_;
    c.kind = ChunkKind::kUnaligned;
  }
  c.io_offset = c.file_offset - offset_;
  return c;
}

}  // namespace fgds::direct
