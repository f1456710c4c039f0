#include "usrbio/cuda/cuda_memory.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::cuda {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kGranule = 64 << 10;
constexpr uint64_t kMiB = 1 << 20;

TEST(AlignDmaBufRangeTest, WidensToGpuPagesInsideAllocation) {
  const CUdeviceptr base = 0x7f0000000000;
  DmaBufRange range;
  ASSERT_EQ(AlignDmaBufRange(base + 70000, 1000, base, 2 * kMiB, kPage,
                             kGranule, &range),
            0);
  EXPECT_EQ(range.base, base + kGranule);
  EXPECT_EQ(range.size, kGranule);
  EXPECT_EQ(range.offset, 70000 - kGranule);
}

TEST(AlignDmaBufRangeTest, FallsBackToHostPagesAtAllocationEdges) {
  // A 12 KiB allocation inside a 64 KiB page: 64 KiB would leave it.
  const CUdeviceptr base = 0x7f0000001000;
  DmaBufRange range;
  ASSERT_EQ(AlignDmaBufRange(base + 100, 5000, base, 3 * kPage, kPage, kGranule,
                             &range),
            0);
  EXPECT_EQ(range.base, base);
  EXPECT_EQ(range.size, 2 * kPage);
  EXPECT_EQ(range.offset, 100u);
}

TEST(AlignDmaBufRangeTest, WholeAllocation) {
  const CUdeviceptr base = 0x7f0000000000;
  DmaBufRange range;
  ASSERT_EQ(
      AlignDmaBufRange(base, 2 * kMiB, base, 2 * kMiB, kPage, kGranule, &range),
      0);
  EXPECT_EQ(range.base, base);
  EXPECT_EQ(range.size, 2 * kMiB);
  EXPECT_EQ(range.offset, 0u);
}

TEST(AlignDmaBufRangeTest, Rejects) {
  const CUdeviceptr base = 0x7f0000000000;
  DmaBufRange range;
  // Empty, before, past the end.
  EXPECT_EQ(AlignDmaBufRange(base, 0, base, kMiB, kPage, kGranule, &range),
            -EINVAL);
  EXPECT_EQ(AlignDmaBufRange(base - 1, 10, base, kMiB, kPage, kGranule, &range),
            -EINVAL);
  EXPECT_EQ(AlignDmaBufRange(base + kMiB - 10, 11, base, kMiB, kPage, kGranule,
                             &range),
            -EINVAL);
  // A 256-byte allocation that shares its page with others cannot be
  // exported on its own.
  EXPECT_EQ(AlignDmaBufRange(base + 512, 256, base + 512, 256, kPage, kGranule,
                             &range),
            -EINVAL);
}

}  // namespace
}  // namespace fgds::cuda
