#include "usrbio/direct/plan.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::direct {
namespace {

constexpr uint64_t kAlign = 4096;
constexpr uint64_t kChunk = 64 * 1024;

std::vector<Chunk> Chunks(const IoPlan& plan) {
  std::vector<Chunk> out;
  for (uint64_t i = 0; i < plan.chunk_count(); ++i)
    out.push_back(plan.chunk(i));
  return out;
}

// The invariants every plan keeps: chunks tile the range in order, none is
// longer than a chunk, aligned ones are aligned in offset and length, and
// unaligned ones exist only where alignment is impossible.
void CheckPlan(uint64_t offset, uint64_t size, bool direct) {
  SCOPED_TRACE(testing::Message() << "offset " << offset << " size " << size
                                  << " direct " << direct);
  const IoPlan plan(offset, size, kAlign, kChunk, direct);
  const std::vector<Chunk> chunks = Chunks(plan);
  uint64_t at = offset;
  int unaligned = 0;
  for (const Chunk& c : chunks) {
    EXPECT_EQ(c.file_offset, at);
    EXPECT_EQ(c.io_offset, at - offset);
    EXPECT_GT(c.length, 0u);
    EXPECT_LE(c.length, kChunk);
    if (c.kind == ChunkKind::kAligned) {
      EXPECT_TRUE(direct);
      EXPECT_EQ(c.file_offset % kAlign, 0u);
      EXPECT_EQ(c.length % kAlign, 0u);
    } else {
      ++unaligned;
    }
    at += c.length;
  }
  EXPECT_EQ(at, offset + size);
  if (direct) {
    // At most a head and a tail, unless the range never crosses a
    // boundary, where it is a single buffered chunk.
    EXPECT_LE(unaligned, 2);
  }
}

TEST(IoPlanTest, Empty) {
  const IoPlan plan(12345, 0, kAlign, kChunk, true);
  EXPECT_EQ(plan.chunk_count(), 0u);
}

TEST(IoPlanTest, AlignedIsAllDirect) {
  const IoPlan plan(8 * kAlign, 3 * kChunk, kAlign, kChunk, true);
  ASSERT_EQ(plan.chunk_count(), 3u);
  for (const Chunk& c : Chunks(plan)) {
    EXPECT_EQ(c.kind, ChunkKind::kAligned);
    EXPECT_EQ(c.length, kChunk);
  }
}

TEST(IoPlanTest, HeadBodyTail) {
  const IoPlan plan(100, 2 * kChunk, kAlign, kChunk, true);
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

TEST(IoPlanTest, InsideOneBlockIsOneBufferedChunk) {
  const IoPlan plan(5000, 100, kAlign, kChunk, true);
  ASSERT_EQ(plan.chunk_count(), 1u);
  EXPECT_EQ(plan.chunk(0).kind, ChunkKind::kUnaligned);
  EXPECT_EQ(plan.chunk(0).length, 100u);
}

TEST(IoPlanTest, WithoutDirectEverythingIsBufferedInChunks) {
  const IoPlan plan(0, 5 * kChunk / 2, kAlign, kChunk, false);
  ASSERT_EQ(plan.chunk_count(), 3u);
  for (const Chunk& c : Chunks(plan)) {
    EXPECT_EQ(c.kind, ChunkKind::kUnaligned);
  }
}

TEST(IoPlanTest, RandomRangesKeepInvariants) {
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
    }
  }
}

}  // namespace
}  // namespace fgds::direct
