#include "usrbio/gpu/chunking.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::usrbio::gpu {
namespace {

constexpr uint64_t kChunk = 1 << 20;

// Cuts [offset, offset + len) as the stager does and checks the pieces.
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

TEST(ChunkingTest, AlignedRequestsCutIntoWholeChunks) {
  EXPECT_EQ(ChunkLength(0, 10 * kChunk, kChunk), kChunk);
  EXPECT_EQ(ChunkCount(0, 10 * kChunk, kChunk), 10u);
  EXPECT_EQ(ChunkCount(4096, 10 * kChunk, kChunk), 10u);
  EXPECT_EQ(ChunkLength(kChunk, 100, kChunk), 100u);
}

TEST(ChunkingTest, UnalignedStartGivesAShortFirstChunk) {
  EXPECT_EQ(ChunkLength(100, 10 * kChunk, kChunk), kChunk - 100);
  EXPECT_EQ(ChunkLength(4096 + 1, 10 * kChunk, kChunk), kChunk - 1);
  EXPECT_EQ(ChunkCount(100, kChunk, kChunk), 2u);
  EXPECT_EQ(ChunkCount(100, kChunk - 100, kChunk), 1u);
}

TEST(ChunkingTest, ManyShapesCoverTheRequestExactly) {
  for (uint64_t chunk : {uint64_t{4096}, uint64_t{65536}, kChunk}) {
    for (uint64_t offset :
         {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4096},
          uint64_t{12345}, (uint64_t{1} << 40) + 17}) {
      for (uint64_t len : {uint64_t{1}, uint64_t{4095}, uint64_t{4096},
                           uint64_t{4097}, uint64_t{65537}, 3 * kChunk + 5}) {
        CheckSplit(offset, len, chunk);
      }
    }
  }
}

TEST(RequestResultTest, AllChunksCompleteGiveTheLength) {
  RequestResult r(300);
  r.AddChunk(100, 100, 100);
  r.AddChunk(0, 100, 100);
  r.AddChunk(200, 100, 100);
  EXPECT_EQ(r.Value(), 300);
}

TEST(RequestResultTest, ShortChunkGivesThePrefix) {
  RequestResult r(300);
  r.AddChunk(200, 100, 0);  // past EOF, finished first
  r.AddChunk(100, 100, 40);
  r.AddChunk(0, 100, 100);
  EXPECT_EQ(r.Value(), 140);
  EXPECT_FALSE(r.Wanted(140));
  EXPECT_TRUE(r.Wanted(139));
}

TEST(RequestResultTest, ErrorAfterBytesGivesThePrefix) {
  RequestResult r(300);
  r.AddChunk(0, 100, 100);
  r.AddChunk(100, 100, -EIO);
  EXPECT_EQ(r.Value(), 100);
}

TEST(RequestResultTest, ErrorAtTheStartGivesTheErrno) {
  RequestResult r(300);
  r.AddChunk(100, 100, 100);
  r.AddChunk(0, 100, -EBADF);
  EXPECT_EQ(r.Value(), -EBADF);
}

TEST(RequestResultTest, EmptyReadAtEofGivesZero) {
  RequestResult r(300);
  r.AddChunk(0, 100, 0);
  EXPECT_EQ(r.Value(), 0);
}

TEST(RequestResultTest, FailOverridesEverything) {
  RequestResult r(300);
  r.AddChunk(0, 100, 100);
  r.Fail(-EFAULT);
  r.Fail(-EIO);
  EXPECT_EQ(r.Value(), -EFAULT);
  EXPECT_FALSE(r.Wanted(0));
}

}  // namespace
}  // namespace fgds::usrbio::gpu
