#include "backend/remote/unsynced_writes.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

TEST(UnsyncedWritesTest, ASyncTakesTheAgentsThatTookWritesOnce) {
  UnsyncedWrites u;
  u.Note("a", 0, 11);
  u.Note("a", 2, 33);
  u.Note("a", 0, 11);
  u.Note("b", 1, 22);
  UnsyncedWrites::Sync s = u.BeginSync("a");
  ASSERT_TRUE(s.began);
  ASSERT_EQ(s.pending.size(), 2u);
  EXPECT_EQ(s.pending[0].agent, 0);
  EXPECT_EQ(s.pending[1].agent, 2);
  EXPECT_FALSE(s.pending[0].lost);
  u.EndSync("a", s, 0);
  EXPECT_TRUE(u.BeginSync("a").pending.empty()) << "nothing new written";
  EXPECT_FALSE(u.BeginSync("never").began);
  EXPECT_EQ(u.files(), 1u) << "b";
}

TEST(UnsyncedWritesTest, WritesToTwoInstancesOfAnAgentAreLost) {
  UnsyncedWrites u;
  u.Note("a", 0, 11);
  u.Note("a", 0, 12);  // the agent restarted in between
  UnsyncedWrites::Sync s = u.BeginSync("a");
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_TRUE(s.pending[0].lost);
  EXPECT_EQ(s.pending[0].instance, 12u);
  u.EndSync("a", s, -EIO);
}

// A second fsync while the first is syncing waits for it (the writes the
// first took are not durable until it ends) and reports its failure.
TEST(UnsyncedWritesTest, ASecondSyncWaitsForTheFirstAndSharesItsFailure) {
  UnsyncedWrites u;
  uint64_t told = u.Opened("a");  // the second sync's handle
  u.Note("a", 0, 11);
  UnsyncedWrites::Sync first = u.BeginSync("a");
  std::atomic<bool> second_began{false};
  UnsyncedWrites::Sync second;
  std::thread t([&] {
    second = u.BeginSync("a");
    second_began = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(second_began.load()) << "did not wait for the first sync";
  u.EndSync("a", first, -EIO);
  t.join();
  EXPECT_TRUE(second.began);
  u.EndSync("a", second, 0);
  EXPECT_EQ(u.Check("a", &told, true), -EIO);
  u.Closed("a");
  EXPECT_EQ(u.files(), 0u);
}

// Errors as Linux's errseq: every handle open at a failure hears of it;
// an fsync (mark) once, a close (no mark) each time; a handle opened later
// does not; the record goes with the last handle.
TEST(UnsyncedWritesTest, AFailureIsReportedToEachHandleOpenWhenItFailed) {
  UnsyncedWrites u;
  uint64_t a = u.Opened("f");
  uint64_t b = u.Opened("f");
  u.Note("f", 0, 11);
  UnsyncedWrites::Sync s = u.BeginSync("f");
  u.EndSync("f", s, -EIO);
  uint64_t c = u.Opened("f");
  EXPECT_EQ(u.Check("f", &c, true), 0) << "opened after the failure";
  EXPECT_EQ(u.Check("f", &a, false), -EIO);
  EXPECT_EQ(u.Check("f", &a, false), -EIO) << "a close does not mark";
  EXPECT_EQ(u.Check("f", &a, true), -EIO);
  EXPECT_EQ(u.Check("f", &a, true), 0) << "an fsync marks";
  EXPECT_EQ(u.Check("f", &b, true), -EIO) << "the other handle";
  EXPECT_EQ(u.Check("g", &b, true), 0) << "another file";
  for (int i = 0; i < 3; ++i) u.Closed("f");
  EXPECT_EQ(u.files(), 0u);
  u.Closed("f");  // one too many: ignored
  EXPECT_EQ(u.files(), 0u);
}

}  // namespace
}  // namespace fgds::remote
