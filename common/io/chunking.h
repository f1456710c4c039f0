// File: common/io/chunking.h
//
// How FGDS cuts one transfer into chunks: the one rule shared by the I/O
// engine's planner (io_plan.h, its split), libfgds's bounce engine
// (usrbio/direct: one staging slot per chunk) and the usrbio GPU stager
// (usrbio/gpu: one ring entry per chunk). Header-only and libc-only: the
// usrbio client library, which links no abseil, includes it. Pure
// arithmetic, unit-tested (chunking_test.cc).
//
// Cuts fall on multiples of `alignment` (a power of two; 4096 for O_DIRECT)
// in the file, at most chunk_bytes apart, so every chunk is aligned in
// offset and length but those holding the unaligned ends:
//
//   file:  |head|   aligned chunk   |   aligned chunk   |...|tail|
//          ^offset                                            ^offset+size
//
// The head runs from `offset` to the first multiple of the alignment, the
// tail from the last multiple to the end. Edges::kMerged (ChunkLength) lets
// them ride in their neighbouring chunk: fewest chunks, where a chunk is
// served whole either way (the stager's entries, the engine's pieces).
// Edges::kSeparate makes them chunks of their own, so that everything
// between is aligned for O_DIRECT while they go buffered (libfgds). A
// range that never crosses a boundary is one unaligned chunk either way.
#ifndef FGDS_COMMON_IO_CHUNKING_H_
#define FGDS_COMMON_IO_CHUNKING_H_

#include <algorithm>
#include <cstdint>

namespace fgds::io {

inline constexpr uint64_t kChunkAlignment = 4096;

// ChunkLength returns the length of the chunk that starts at `file_offset`
// with `remaining` (> 0) bytes of the transfer left, under Edges::kMerged:
// it ends on the next cut, an aligned offset at most chunk_bytes on. Never 0,
// never more than chunk_bytes. REQUIRES: alignment a power of two,
// chunk_bytes a nonzero multiple of it.
inline uint64_t ChunkLength(uint64_t file_offset, uint64_t remaining,
                            uint64_t chunk_bytes,
                            uint64_t alignment = kChunkAlignment) {
  // An unaligned start gives a shorter chunk ending on a boundary.
  return std::min(chunk_bytes - (file_offset & (alignment - 1)), remaining);
}

// ChunkCount returns how many chunks ChunkLength cuts [file_offset,
// file_offset + len) into.
inline uint64_t ChunkCount(uint64_t file_offset, uint64_t len,
                           uint64_t chunk_bytes,
                           uint64_t alignment = kChunkAlignment) {
  if (len == 0) return 0;
  const uint64_t first = ChunkLength(file_offset, len, chunk_bytes, alignment);
  return 1 + (len - first + chunk_bytes - 1) / chunk_bytes;
}

enum class ChunkKind : uint8_t {
  kAligned,    // offset and length multiples of the alignment: O_DIRECT
  kUnaligned,  // buffered
};

struct Chunk {
  uint64_t file_offset = 0;
  uint64_t length = 0;
  // Offset from the start of the transfer: in its buffer and its file range.
  uint64_t io_offset = 0;
  ChunkKind kind = ChunkKind::kUnaligned;
};

// ChunkPlan: every chunk of one transfer, by index in O(1), so that workers
// can take chunks of one request by index. Copyable, immutable.
class ChunkPlan {
 public:
  enum class Edges : uint8_t { kMerged, kSeparate };

  // REQUIRES: alignment a power of two, chunk_bytes a nonzero multiple of
  // it, offset + size does not overflow.
  ChunkPlan(uint64_t offset, uint64_t size, uint64_t alignment,
            uint64_t chunk_bytes, Edges edges)
      : offset_(offset),
        end_(offset + size),
        alignment_(alignment),
        chunk_bytes_(chunk_bytes) {
    if (size == 0) return;
    const uint64_t mask = alignment - 1;
    const uint64_t first_boundary = (offset + mask) & ~mask;
    const uint64_t last_boundary = end_ & ~mask;
    if (edges == Edges::kSeparate && first_boundary < last_boundary) {
      head_ = first_boundary - offset;
      tail_ = end_ - last_boundary;
      body_begin_ = first_boundary;
      body_end_ = last_boundary;
    } else {
      body_begin_ = offset;
      body_end_ = end_;
    }
    body_chunks_ = ChunkCount(body_begin_, body_end_ - body_begin_,
                              chunk_bytes_, alignment_);
    count_ = (head_ != 0 ? 1 : 0) + body_chunks_ + (tail_ != 0 ? 1 : 0);
  }

  uint64_t chunk_count() const { return count_; }

  // chunk returns chunk `index` (0 <= index < chunk_count()), in file
  // order.
  Chunk chunk(uint64_t index) const {
    Chunk c;
    if (head_ != 0 && index == 0) {
      c.file_offset = offset_;
      c.length = head_;
    } else if (index -= (head_ != 0 ? 1 : 0); index < body_chunks_) {
      // Cuts at the body's aligned start plus multiples of chunk_bytes;
      // the first chunk of an unaligned body ends at the first of them.
      const uint64_t base = body_begin_ & ~(alignment_ - 1);
      c.file_offset = index == 0 ? body_begin_ : base + index * chunk_bytes_;
      c.length = std::min(base + (index + 1) * chunk_bytes_, body_end_) -
                 c.file_offset;
    } else {
      c.file_offset = body_end_;
      c.length = tail_;
    }
    c.io_offset = c.file_offset - offset_;
    const uint64_t mask = alignment_ - 1;
    c.kind = (c.file_offset & mask) == 0 && (c.length & mask) == 0
                 ? ChunkKind::kAligned
                 : ChunkKind::kUnaligned;
    return c;
  }

 private:
  uint64_t offset_;
  uint64_t end_;
  uint64_t alignment_;
  uint64_t chunk_bytes_;
  uint64_t head_ = 0;        // bytes before the body (kSeparate), else 0
  uint64_t tail_ = 0;        // bytes after it
  uint64_t body_begin_ = 0;  // file offsets
  uint64_t body_end_ = 0;
  uint64_t body_chunks_ = 0;
  uint64_t count_ = 0;
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_CHUNKING_H_
