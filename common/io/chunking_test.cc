#include "common/io/chunking.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::io {
namespace {

constexpr uint64_t kAlign = 4096;
constexpr uint64_t kChunk = 64 * 1024;

std::vector<Chunk> Chunks(const ChunkPlan& plan) {
  std::vector<Chunk> out;
  for (uint64_t i = 0; i < plan.chunk_count(); ++i)
    out.push_back(plan.chunk(i));
  return out;
}

constexpr ChunkPlan::Edges kSeparate = ChunkPlan::Edges::kSeparate;
constexpr ChunkPlan::Edges kMerged = ChunkPlan::Edges::kMerged;

// The invariants every plan keeps: chunks tile the range in order, none is
// longer than a chunk, every cut inside the range is aligned, aligned ones
// are aligned in offset and length, and unaligned ones exist only where
// alignment is impossible: with separate edges, at most a head and a tail
// (or one chunk, for a range without a whole aligned block); merged, at
// most the first and the last. Merged plans are what ChunkLength cuts.
void CheckPlan(uint64_t offset, uint64_t size, bool separate) {
  SCOPED_TRACE(testing::Message() << "offset " << offset << " size " << size
                                  << " separate " << separate);
  const ChunkPlan plan(offset, size, kAlign, kChunk,
                       separate ? kSeparate : kMerged);
  const std::vector<Chunk> chunks = Chunks(plan);
  uint64_t at = offset;
  int unaligned = 0;
  for (const Chunk& c : chunks) {
    EXPECT_EQ(c.file_offset, at);
    EXPECT_EQ(c.io_offset, at - offset);
    EXPECT_GT(c.length, 0u);
    EXPECT_LE(c.length, kChunk);
    if (c.file_offset != offset) {
      EXPECT_EQ(c.file_offset % kAlign, 0u);
    }
    if (c.kind == ChunkKind::kAligned) {
      EXPECT_EQ(c.file_offset % kAlign, 0u);
      EXPECT_EQ(c.length % kAlign, 0u);
    } else {
      ++unaligned;
    }
    if (!separate) {
      EXPECT_EQ(c.length, ChunkLength(at, offset + size - at, kChunk, kAlign));
    }
    at += c.length;
  }
  EXPECT_EQ(at, offset + size);
  EXPECT_LE(unaligned, 2);
  if (!separate) {
    EXPECT_EQ(plan.chunk_count(), ChunkCount(offset, size, kChunk));
  }
}

TEST(ChunkPlanTest, Empty) {
  const ChunkPlan plan(12345, 0, kAlign, kChunk, kSeparate);
  EXPECT_EQ(plan.chunk_count(), 0u);
}

TEST(ChunkPlanTest, AlignedIsAllAligned) {
  const ChunkPlan plan(8 * kAlign, 3 * kChunk, kAlign, kChunk, kSeparate);
  ASSERT_EQ(plan.chunk_count(), 3u);
  for (const Chunk& c : Chunks(plan)) {
    EXPECT_EQ(c.kind, ChunkKind::kAligned);
    EXPECT_EQ(c.length, kChunk);
  }
}

TEST(ChunkPlanTest, HeadBodyTail) {
  const ChunkPlan plan(100, 2 * kChunk, kAlign, kChunk, kSeparate);
  const std::vector<Chunk> chunks = Chunks(plan);
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks[0].kind, ChunkKind::kUnaligned);
  EXPECT_EQ(chunks[0].length, kAlign - 100);
  EXPECT_EQ(chunks[1].kind, ChunkKind::kAligned);
  EXPECT_EQ(chunks[1].file_offset, kAlign);
  EXPECT_EQ(chunks[1].length, kChunk);
  EXPECT_EQ(chunks[2].kind, ChunkKind::kAligned);
  EXPECT_EQ(chunks[2].length, kChunk - kAlign);
  EXPECT_EQ(chunks[3].kind, ChunkKind::kUnaligned);
  EXPECT_EQ(chunks[3].length, 100u);
}

TEST(ChunkPlanTest, InsideOneBlockIsOneBufferedChunk) {
  const ChunkPlan plan(5000, 100, kAlign, kChunk, kSeparate);
  ASSERT_EQ(plan.chunk_count(), 1u);
  EXPECT_EQ(plan.chunk(0).kind, ChunkKind::kUnaligned);
  EXPECT_EQ(plan.chunk(0).length, 100u);
}

TEST(ChunkPlanTest, MergedEdgesRideWithTheirNeighbours) {
  const ChunkPlan plan(100, 2 * kChunk, kAlign, kChunk, kMerged);
  const std::vector<Chunk> chunks = Chunks(plan);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].kind, ChunkKind::kUnaligned);
  EXPECT_EQ(chunks[0].length, kChunk - 100);
  EXPECT_EQ(chunks[1].kind, ChunkKind::kAligned);
  EXPECT_EQ(chunks[1].file_offset, kChunk);
  EXPECT_EQ(chunks[2].kind, ChunkKind::kUnaligned);
  EXPECT_EQ(chunks[2].length, 100u);
}

TEST(ChunkPlanTest, RandomRangesKeepInvariants) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t offset = rng() % (4 * kChunk);
    const uint64_t size = rng() % (5 * kChunk);
    CheckPlan(offset, size, (i & 1) != 0);
  }
  // Boundaries.
  for (uint64_t offset : {uint64_t{0}, kAlign - 1, kAlign, kAlign + 1}) {
    for (uint64_t size : {uint64_t{1}, kAlign - 1, kAlign, kAlign + 1, kChunk,
                          kChunk + 1, 3 * kChunk - 1}) {
      CheckPlan(offset, size, true);
      CheckPlan(offset, size, false);
    }
  }
}

constexpr uint64_t kMiB = 1 << 20;

// Cuts [offset, offset + len) as the GPU stager and the engine's split do,
// and checks the pieces.
void CheckSplit(uint64_t offset, uint64_t len, uint64_t chunk) {
  uint64_t done = 0;
  uint64_t count = 0;
  while (done < len) {
    const uint64_t piece = ChunkLength(offset + done, len - done, chunk);
    ASSERT_GT(piece, 0u);
    ASSERT_LE(piece, chunk);
    done += piece;
    ++count;
    // Every boundary inside the request is 4096-aligned in the file.
    if (done < len) {
      EXPECT_EQ((offset + done) % kAlign, 0u) << offset;
    }
  }
  EXPECT_EQ(done, len);
  EXPECT_EQ(count, ChunkCount(offset, len, chunk));
}

TEST(ChunkLengthTest, AlignedRequestsCutIntoWholeChunks) {
  EXPECT_EQ(ChunkLength(0, 10 * kMiB, kMiB), kMiB);
  EXPECT_EQ(ChunkCount(0, 10 * kMiB, kMiB), 10u);
  EXPECT_EQ(ChunkCount(4096, 10 * kMiB, kMiB), 10u);
  EXPECT_EQ(ChunkLength(kMiB, 100, kMiB), 100u);
}

TEST(ChunkLengthTest, UnalignedStartGivesAShortFirstChunk) {
  EXPECT_EQ(ChunkLength(100, 10 * kMiB, kMiB), kMiB - 100);
  EXPECT_EQ(ChunkLength(4096 + 1, 10 * kMiB, kMiB), kMiB - 1);
  EXPECT_EQ(ChunkCount(100, kMiB, kMiB), 2u);
  EXPECT_EQ(ChunkCount(100, kMiB - 100, kMiB), 1u);
}

TEST(ChunkLengthTest, ManyShapesCoverTheRequestExactly) {
  for (uint64_t chunk : {uint64_t{4096}, uint64_t{65536}, kMiB}) {
    for (uint64_t offset :
         {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4096},
          uint64_t{12345}, (uint64_t{1} << 40) + 17}) {
      for (uint64_t len : {uint64_t{1}, uint64_t{4095}, uint64_t{4096},
                           uint64_t{4097}, uint64_t{65537}, 3 * kMiB + 5}) {
        CheckSplit(offset, len, chunk);
      }
    }
  }
}

}  // namespace
}  // namespace fgds::io
