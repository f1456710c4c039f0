#include "backend/ceph/io_pool.h"

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

TEST(IoPoolTest, RunsEveryJobOnceAndDrainsOnDestruction) {
  std::atomic<int> runs{0};
  {
    IoPool pool(3);
    EXPECT_EQ(pool.threads(), 3u);
    for (int i = 0; i < 1000; ++i) pool.Submit([&runs] { ++runs; });
  }
  EXPECT_EQ(runs.load(), 1000);
}

TEST(IoPoolTest, ZeroThreadsMeansOne) {
  IoPool pool(0);
  EXPECT_EQ(pool.threads(), 1u);
  absl::Notification done;
  pool.Submit([&done] { done.Notify(); });
  done.WaitForNotification();
}

TEST(IoPoolTest, BlockedJobsUseOnlyThePoolsThreads) {
  // Two threads, both blocked: a third job waits in the queue rather than
  // starting a thread of its own.
  auto pool = std::make_unique<IoPool>(2);
  absl::Notification release;
  std::atomic<int> started{0};
  for (int i = 0; i < 3; ++i) {
    pool->Submit([&] {
      ++started;
      release.WaitForNotification();
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(started.load(), 2);
  release.Notify();
  pool.reset();
  EXPECT_EQ(started.load(), 3);
}

TEST(IoPoolTest, JobsMaySubmit) {
  std::atomic<int> runs{0};
  {
    IoPool pool(1);
    pool.Submit([&] {
      ++runs;
      pool.Submit([&runs] { ++runs; });
    });
  }
  EXPECT_EQ(runs.load(), 2);
}

}  // namespace
}  // namespace fgds::backend
