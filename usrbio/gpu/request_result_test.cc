#include "usrbio/gpu/request_result.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::usrbio::gpu {
namespace {

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
