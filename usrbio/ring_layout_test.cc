// The shared ring layout: sizes, offsets and the layout function both sides
// compute it with.
#include <cerrno>
#include <cstddef>

#include "fgds/usrbio_ring.h"
#include "fgds/usrbio_wire.h"
#include "gtest/gtest.h"

extern "C" int fgds_c_build_layout_entries(void);

namespace {

TEST(RingLayoutTest, RoundsEntriesUpToPowerOfTwo) {
  struct Case {
    uint32_t entries;
    uint32_t sq;
  } cases[] = {{1, 1},
               {2, 2},
               {3, 4},
               {100, 128},
               {256, 256},
               {257, 512},
               {FGDS_RING_MAX_ENTRIES, FGDS_RING_MAX_ENTRIES}};
  for (const Case& c : cases) {
    fgds_ring_layout layout;
    ASSERT_EQ(fgds_ring_get_layout(c.entries, &layout), 0) << c.entries;
    EXPECT_EQ(layout.sq_entries, c.sq) << c.entries;
    EXPECT_EQ(layout.cq_entries, 2 * c.sq) << c.entries;
  }
}

TEST(RingLayoutTest, RejectsOutOfRangeEntries) {
  fgds_ring_layout layout;
  EXPECT_EQ(fgds_ring_get_layout(0, &layout), -EINVAL);
  EXPECT_EQ(fgds_ring_get_layout(FGDS_RING_MAX_ENTRIES + 1, &layout), -EINVAL);
  EXPECT_EQ(fgds_ring_get_layout(UINT32_MAX, &layout), -EINVAL);
}

TEST(RingLayoutTest, ArraysFollowHeaderWithoutOverlap) {
  for (uint32_t entries = 1; entries <= FGDS_RING_MAX_ENTRIES; entries *= 2) {
    fgds_ring_layout l;
    ASSERT_EQ(fgds_ring_get_layout(entries, &l), 0);
    EXPECT_EQ(l.sq_offset, sizeof(fgds_ring_header));
    EXPECT_EQ(l.cq_offset, l.sq_offset + uint64_t{l.sq_entries} * 48);
    EXPECT_EQ(l.cq_offset % alignof(fgds_cqe), 0u);
    EXPECT_GE(l.total_size, l.cq_offset + uint64_t{l.cq_entries} * 24);
    EXPECT_EQ(l.total_size % 4096, 0u);
  }
}

TEST(RingLayoutTest, IndexesOwnTheirCacheLines) {
  EXPECT_EQ(offsetof(fgds_ring_header, sq_tail) % FGDS_CACHE_LINE, 0u);
  EXPECT_EQ(
      offsetof(fgds_ring_header, sq_head) - offsetof(fgds_ring_header, sq_tail),
      FGDS_CACHE_LINE);
  EXPECT_EQ(
      offsetof(fgds_ring_header, cq_tail) - offsetof(fgds_ring_header, sq_head),
      FGDS_CACHE_LINE);
  EXPECT_EQ(
      offsetof(fgds_ring_header, cq_head) - offsetof(fgds_ring_header, cq_tail),
      FGDS_CACHE_LINE);
}

TEST(RingLayoutTest, HeadersCompileAsC) {
  EXPECT_EQ(fgds_c_build_layout_entries(), 128);
}

TEST(WireLayoutTest, EveryMessageFitsTheReceiveBuffer) {
  EXPECT_LE(sizeof(fgds_msg_header) + sizeof(fgds_msg_ior_register),
            FGDS_WIRE_MAX_MESSAGE);
  EXPECT_LE(sizeof(fgds_msg_header) + sizeof(fgds_msg_gpu_iov_register),
            FGDS_WIRE_MAX_MESSAGE);
  EXPECT_LE(sizeof(fgds_msg_header) + sizeof(fgds_msg_reply),
            FGDS_WIRE_MAX_MESSAGE);
}

}  // namespace
