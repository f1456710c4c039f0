#include "common/io/io_plan.h"

#include <cerrno>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::io {
namespace {

char g_buf[1 << 22];

IoRequest Req(int fd, size_t buf_off, size_t len, uint64_t off,
              IoOp op = IoOp::kRead) {
  return IoRequest{op, fd, g_buf + buf_off, len, off, nullptr};
}

PlanLimits Limits(size_t merge, size_t split, size_t spread, int workers) {
  PlanLimits l;
  l.merge_bytes = merge;
  l.split_bytes = split;
  l.spread_bytes = spread;
  l.workers = workers;
  return l;
}

TEST(IoPlanTest, ContinuingRequestsMergeUpToTheLimit) {
  std::vector<IoRequest> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(Req(3, i * 4096, 4096, i * 4096));
  IoPlan plan;
  PlanBatch(batch, Limits(16384, 1 << 20, 1 << 30, 4), &plan);
  ASSERT_EQ(plan.units.size(), 2u);
  EXPECT_EQ(plan.units[0].requests, 4u);
  EXPECT_EQ(plan.units[1].first_request, 4u);
  EXPECT_EQ(plan.units[1].requests, 2u);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_EQ(plan.pieces[0].len, 16384u);
  EXPECT_EQ(plan.pieces[1].offset, 16384u);
  EXPECT_EQ(plan.pieces[1].buf, g_buf + 16384);
}

TEST(IoPlanTest, OnlyTrueContinuationsMerge) {
  std::vector<IoRequest> batch = {
      Req(3, 0, 4096, 0),
      Req(4, 4096, 4096, 4096),                  // other fd
      Req(4, 8192, 4096, 12288),                 // file gap
      Req(4, 20000, 4096, 16384),                // buffer gap
      Req(4, 24096, 4096, 20480, IoOp::kWrite),  // other op
      Req(4, 28192, 0, 24576),                   // empty
  };
  IoPlan plan;
  PlanBatch(batch, Limits(1 << 20, 1 << 20, 1 << 30, 4), &plan);
  EXPECT_EQ(plan.units.size(), batch.size());
  EXPECT_EQ(plan.pieces.size(), batch.size());
  EXPECT_EQ(plan.pieces.back().len, 0u);
}

TEST(IoPlanTest, LongRequestsSplitAtTheLimit) {
  std::vector<IoRequest> batch = {Req(3, 0, 10000, 8192)};
  IoPlan plan;
  PlanBatch(batch, Limits(1 << 20, 4096, 1 << 30, 4), &plan);
  ASSERT_EQ(plan.units.size(), 1u);
  ASSERT_EQ(plan.pieces.size(), 3u);
  EXPECT_EQ(plan.pieces[0].offset, 8192u);
  EXPECT_EQ(plan.pieces[1].offset, 12288u);
  EXPECT_EQ(plan.pieces[2].len, 10000u - 8192u);
  EXPECT_EQ(plan.pieces[2].buf, g_buf + 8192);
}

TEST(IoPlanTest, PiecesSpreadByBytesAndWorkers) {
  std::vector<IoRequest> batch;
  // 32 scattered 4 KiB reads: 128 KiB.
  for (int i = 0; i < 32; ++i)
    batch.push_back(Req(3, i * 8192, 4096, i * 8192));
  // 32 KiB per group -> 4 groups, though 8 workers.
  IoPlan plan;
  PlanBatch(batch, Limits(1 << 20, 1 << 20, 32 << 10, 8), &plan);
  EXPECT_EQ(plan.group_starts, (std::vector<uint32_t>{0, 8, 16, 24, 32}));
  // Two workers cap it at two groups.
  PlanBatch(batch, Limits(1 << 20, 1 << 20, 32 << 10, 2), &plan);
  EXPECT_EQ(plan.group_starts, (std::vector<uint32_t>{0, 16, 32}));
  // Little data: one group.
  PlanBatch(std::span(batch).first(3), Limits(1 << 20, 1 << 20, 32 << 10, 8),
            &plan);
  EXPECT_EQ(plan.group_starts, (std::vector<uint32_t>{0, 3}));
  // Never more groups than pieces.
  PlanBatch(std::span(batch).first(1), Limits(1 << 20, 1 << 20, 1, 8), &plan);
  EXPECT_EQ(plan.group_starts, (std::vector<uint32_t>{0, 1}));
}

TEST(IoPlanTest, CombineStopsAtTheFirstShortOrFailedPiece) {
  std::vector<PlannedPiece> pieces(3);
  for (auto& p : pieces) p.len = 100;
  UnitOutcome o = CombinePieces(pieces, std::vector<int64_t>{100, 100, 100});
  EXPECT_EQ(o.bytes, 300u);
  EXPECT_EQ(o.error, 0);
  o = CombinePieces(pieces, std::vector<int64_t>{100, 40, 0});
  EXPECT_EQ(o.bytes, 140u);
  EXPECT_EQ(o.error, 0);
  o = CombinePieces(pieces, std::vector<int64_t>{100, -EIO, 100});
  EXPECT_EQ(o.bytes, 100u);
  EXPECT_EQ(o.error, -EIO);
  o = CombinePieces(pieces, std::vector<int64_t>{-EBADF, -EBADF, -EBADF});
  EXPECT_EQ(o.bytes, 0u);
  EXPECT_EQ(o.error, -EBADF);
}

TEST(IoPlanTest, EachRequestGetsWhatPreadWould) {
  const UnitOutcome eof{150, 0};
  EXPECT_EQ(RequestResult(eof, 0, 100), 100);
  EXPECT_EQ(RequestResult(eof, 100, 100), 50);
  EXPECT_EQ(RequestResult(eof, 200, 100), 0);
  const UnitOutcome failed{150, -EIO};
  EXPECT_EQ(RequestResult(failed, 100, 100), 50);
  EXPECT_EQ(RequestResult(failed, 200, 100), -EIO);
  EXPECT_EQ(RequestResult(failed, 150, 100), -EIO);
}

}  // namespace
}  // namespace fgds::io
