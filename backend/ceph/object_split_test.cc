#include "backend/ceph/object_split.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ObjectSplitTest, GranuleOfLayouts) {
  // The default layout: 4 MiB objects, one stripe.
  EXPECT_EQ(SplitGranule(4 * kMiB, 1, 4 * kMiB), 4 * kMiB);
  // Striped over 4 objects in 1 MiB units: each unit is another object.
  EXPECT_EQ(SplitGranule(kMiB, 4, 4 * kMiB), kMiB);
  // 64 KiB units striped: raised to 1 MiB, a multiple of the unit.
  EXPECT_EQ(SplitGranule(64 << 10, 8, 4 * kMiB), kMiB);
  EXPECT_EQ(SplitGranule(192 << 10, 8, 4 * kMiB), 1152u << 10);
  // No layout: no split.
  EXPECT_EQ(SplitGranule(0, 0, 0), 0u);
}

TEST(ObjectSplitTest, CutsAtObjectBoundaries) {
  auto pieces = SplitAtObjects(3 * kMiB, 6 * kMiB + 5, 4 * kMiB);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].offset, 3 * kMiB);
  EXPECT_EQ(pieces[0].len, kMiB);
  EXPECT_EQ(pieces[1].offset, 4 * kMiB);
  EXPECT_EQ(pieces[1].len, 4 * kMiB);
  EXPECT_EQ(pieces[2].offset, 8 * kMiB);
  EXPECT_EQ(pieces[2].len, kMiB + 5);
  // Inside one object: one piece; on an exact boundary: no empty piece.
  EXPECT_EQ(SplitAtObjects(1, 100, 4 * kMiB).size(), 1u);
  EXPECT_EQ(SplitAtObjects(0, 8 * kMiB, 4 * kMiB).size(), 2u);
  EXPECT_EQ(SplitAtObjects(5, 0, 4 * kMiB).size(), 0u);
  EXPECT_EQ(SplitAtObjects(5, 100 * kMiB, 0).size(), 1u);
}

TEST(ObjectSplitTest, CombineStopsAtTheFirstShortPiece) {
  std::vector<Piece> p = {{0, 10}, {10, 10}, {20, 10}};
  EXPECT_EQ(CombinePieces(p, {10, 10, 10}), 30);
  // End of file inside the second piece: the third read nothing.
  EXPECT_EQ(CombinePieces(p, {10, 4, 0}), 14);
  // A short piece hides what later pieces moved: the range stopped there.
  EXPECT_EQ(CombinePieces(p, {10, 4, 10}), 14);
  // An error after progress is the progress; before any, the error.
  EXPECT_EQ(CombinePieces(p, {10, -EIO, 10}), 10);
  EXPECT_EQ(CombinePieces(p, {-EDQUOT, 10, 10}), -EDQUOT);
  EXPECT_EQ(CombinePieces(p, {0, 10, 10}), 0);
}

}  // namespace
}  // namespace fgds::backend
