#include "fusefs/session/cache_invalidator.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

struct Recorder {
  fgds::Mutex mu;
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> calls;
  // Whether a range was covered by a call made before its done ran.
  bool Covered(uint64_t node, uint64_t off, uint64_t len) {
    fgds::MutexLock lock(&mu);
    for (auto [n, o, l] : calls) {
      if (n == node && o <= off && off + len <= o + l) return true;
    }
    return false;
  }
};

TEST(CacheInvalidatorTest, DoneRunsOnlyAfterItsRangeIsInvalidated) {
  Recorder rec;
  std::atomic<int> done{0};
  std::atomic<int> uncovered{0};
  {
    CacheInvalidator inv(
        [&](uint64_t node, uint64_t off, uint64_t len) {
          fgds::MutexLock lock(&rec.mu);
          rec.calls.emplace_back(node, off, len);
        },
        /*may_hold_dirty_pages=*/true);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (uint64_t i = 0; i < 200; ++i) {
          const uint64_t node = 10 + (i % 3);
          const uint64_t off = (t * 1000 + i) * 4096;
          inv.Invalidate(node, off, 4096, [&, node, off] {
            if (!rec.Covered(node, off, 4096)) ++uncovered;
            ++done;
          });
        }
      });
    }
    for (auto& th : threads) th.join();
  }  // the destructor runs what is still queued
  EXPECT_EQ(done.load(), 800);
  EXPECT_EQ(uncovered.load(), 0);
  // Merged: fewer calls than ranges, and never a node it was not given.
  fgds::MutexLock lock(&rec.mu);
  EXPECT_LE(rec.calls.size(), 800u);
  for (auto [n, o, l] : rec.calls) {
    EXPECT_GE(n, 10u);
    EXPECT_LE(n, 12u);
  }
}

TEST(CacheInvalidatorTest, RangesOfOneRoundMergePerNode) {
  fgds::Mutex gate_mu;
  bool gate_open = false;
  fgds::CondVar gate;
  Recorder rec;
  int first_calls = 0;
  {
    CacheInvalidator inv(
        [&](uint64_t node, uint64_t off, uint64_t len) {
          {
            fgds::MutexLock lock(&gate_mu);
            // Hold the first round until the rest is queued behind it.
            while (!gate_open && first_calls++ == 0) gate.Wait(&gate_mu);
          }
          fgds::MutexLock lock(&rec.mu);
          rec.calls.emplace_back(node, off, len);
        },
        /*may_hold_dirty_pages=*/true);
    inv.Invalidate(1, 0, 10, [] {});
    // Give the thread time to start the first round (it blocks on the gate).
    while (true) {
      fgds::MutexLock lock(&gate_mu);
      if (first_calls > 0) break;
    }
    inv.Invalidate(2, 100, 10, [] {});
    inv.Invalidate(2, 50, 10, [] {});
    inv.Invalidate(2, 300, 5, [] {});
    {
      fgds::MutexLock lock(&gate_mu);
      gate_open = true;
    }
    gate.SignalAll();
  }
  fgds::MutexLock lock(&rec.mu);
  ASSERT_EQ(rec.calls.size(), 2u);
  EXPECT_EQ(rec.calls[1],
            std::make_tuple(uint64_t{2}, uint64_t{50}, uint64_t{255}));
}

// A batch's writes wait for one callback after all of their ranges (ring.cc
// step 1): every range is invalidated, in one round, before it runs.
TEST(CacheInvalidatorTest, RangesQueuedTogetherShareOneDone) {
  Recorder rec;
  std::atomic<int> done{0};
  bool covered = false;
  {
    CacheInvalidator inv(
        [&](uint64_t node, uint64_t off, uint64_t len) {
          fgds::MutexLock lock(&rec.mu);
          rec.calls.emplace_back(node, off, len);
        },
        /*may_hold_dirty_pages=*/true);
    const CacheInvalidator::Range ranges[] = {
        {7, 0, 4096}, {8, 100, 100}, {7, 65536, 4096}};
    inv.Invalidate(ranges, [&] {
      covered = rec.Covered(7, 0, 4096) && rec.Covered(8, 100, 100) &&
                rec.Covered(7, 65536, 4096);
      ++done;
    });
    inv.Flush();
    EXPECT_EQ(done.load(), 1);
    EXPECT_TRUE(covered);
    // One call per node: the two ranges of node 7 merged.
    fgds::MutexLock lock(&rec.mu);
    EXPECT_EQ(rec.calls.size(), 2u);
  }
  // No ranges: nothing to wait for.
  CacheInvalidator inv([](uint64_t, uint64_t, uint64_t) { FAIL(); },
                       /*may_hold_dirty_pages=*/false);
  EXPECT_FALSE(inv.may_hold_dirty_pages());
  inv.Invalidate(std::span<const CacheInvalidator::Range>(), [&] { ++done; });
  EXPECT_EQ(done.load(), 2);
}

// Flush returns only after the callbacks queued before it ran (the daemon
// hands held writes to its engine that way before the engine goes), even
// while calls are slow.
TEST(CacheInvalidatorTest, FlushWaitsForQueuedCallbacks) {
  std::atomic<int> calls{0};
  std::atomic<int> done{0};
  CacheInvalidator inv(
      [&](uint64_t, uint64_t, uint64_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++calls;
      },
      /*may_hold_dirty_pages=*/true);
  for (uint64_t i = 0; i < 50; ++i) {
    inv.Invalidate(i, 0, 4096, [&] { ++done; });
  }
  inv.Flush();
  EXPECT_EQ(done.load(), 50);
  EXPECT_GE(calls.load(), 1);
  inv.Flush();  // nothing queued: returns at once
}

}  // namespace
}  // namespace fgds::session
