#include "fusefs/op_stats.h"

#include <stdexcept>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(OpStatsTest, CountsErrorsAndBytesPerOp) {
  OpStats stats;
  stats.Record(Op::kRead, microseconds(10), 4096, 0);
  stats.Record(Op::kRead, microseconds(10), 0, EIO);
  stats.Record(Op::kWrite, microseconds(10), 100, 0);
  EXPECT_EQ(stats.count(Op::kRead), 2u);
  EXPECT_EQ(stats.errors(Op::kRead), 1u);
  EXPECT_EQ(stats.bytes(Op::kRead), 4096u);
  EXPECT_EQ(stats.count(Op::kWrite), 1u);
  EXPECT_EQ(stats.count(Op::kLookup), 0u);
}

// A handler that throws fails its request (the table's guard replies with
// an errno, ops_table.cc): its timer, destroyed by the unwinding, must count
// an error, not a success.
TEST(OpStatsTest, ATimerUnwoundByAnExceptionCountsAnError) {
  OpStats stats;
  try {
    OpTimer timer(stats, Op::kLookup);
    throw std::runtime_error("handler failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(stats.count(Op::kLookup), 1u);
  EXPECT_EQ(stats.errors(Op::kLookup), 1u);
  // A timer that ends normally inside a catch block (an exception in
  // flight around it, not through it) still counts its own result.
  try {
    throw std::runtime_error("outer");
  } catch (const std::runtime_error&) {
    OpTimer timer(stats, Op::kGetattr);
    timer.set_result(0);
  }
  EXPECT_EQ(stats.errors(Op::kGetattr), 0u);
  {
    OpTimer timer(stats, Op::kRead);
    timer.set_result(10, /*add_bytes=*/true);
  }
  EXPECT_EQ(stats.errors(Op::kRead), 0u);
}

TEST(OpStatsTest, QuantilesBoundTheLatencyWithinAFactorOfTwo) {
  OpStats stats;
  for (int i = 0; i < 99; ++i)
    stats.Record(Op::kLookup, nanoseconds(1000), 0, 0);
  stats.Record(Op::kLookup, nanoseconds(1000000), 0, 0);
  uint64_t p50 = stats.LatencyQuantileNs(Op::kLookup, 0.5);
  EXPECT_GE(p50, 1000u);
  EXPECT_LT(p50, 2000u + 1);
  uint64_t p100 = stats.LatencyQuantileNs(Op::kLookup, 1.0);
  EXPECT_GE(p100, 1000000u);
  EXPECT_LE(p100, 2000000u + 100000);
  EXPECT_EQ(stats.LatencyQuantileNs(Op::kRmdir, 0.5), 0u);
}

TEST(OpStatsTest, RenderListsEveryOp) {
  OpStats stats;
  stats.Record(Op::kCopyFileRange, microseconds(5), 10, 0);
  std::string text = stats.Render("# header");
  EXPECT_EQ(text.rfind("# header", 0), 0u);
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i) {
    EXPECT_NE(text.find(OpName(static_cast<Op>(i))), std::string::npos);
  }
}

TEST(OpStatsTest, ConcurrentRecordingLosesNothing) {
  OpStats stats;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        stats.Record(Op::kGetattr, nanoseconds(i), 1, 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(stats.count(Op::kGetattr), 40000u);
  EXPECT_EQ(stats.bytes(Op::kGetattr), 40000u);
}

}  // namespace
}  // namespace fgds::fusefs
