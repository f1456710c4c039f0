#include "backend/remote/agent/write_log.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

TEST(WriteLogTest, ARepeatedSequenceNumberGetsTheFirstResultWithoutRunning) {
  WriteLog log;
  int runs = 0;
  bool repeated = true;
  EXPECT_EQ(log.ApplyOnce(
                1, 5,
                [&] {
                  ++runs;
                  return int64_t{4096};
                },
                &repeated),
            4096);
  EXPECT_FALSE(repeated);
  EXPECT_EQ(log.ApplyOnce(
                1, 5,
                [&] {
                  ++runs;
                  return int64_t{1};
                },
                &repeated),
            4096);
  EXPECT_TRUE(repeated);
  EXPECT_EQ(runs, 1);
  // The same number from another daemon is another write.
  EXPECT_EQ(log.ApplyOnce(2, 5,
                          [&] {
                            ++runs;
                            return int64_t{7};
                          }),
            7);
  EXPECT_EQ(runs, 2);
}

TEST(WriteLogTest, ARetryDuringTheFirstAttemptWaitsForItsResult) {
  WriteLog log;
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> runs{0};
  std::thread first([&] {
    log.ApplyOnce(1, 1, [&] {
      runs++;
      started = true;
      while (!release)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return int64_t{-EIO};
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<int64_t> retried{0};
  std::thread retry([&] {
    retried = log.ApplyOnce(1, 1, [&] {
      runs++;
      return int64_t{0};
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(retried.load(), 0) << "the retry must wait, not run";
  release = true;
  first.join();
  retry.join();
  EXPECT_EQ(retried.load(), -EIO);
  EXPECT_EQ(runs.load(), 1);
}

TEST(WriteLogTest, ResultsBeyondTheWindowAreStaleNotReapplied) {
  WriteLog log;
  for (uint64_t seq = 1; seq <= WriteLog::kWritesPerClient + 10; ++seq) {
    log.ApplyOnce(1, seq, [] { return int64_t{1}; });
  }
  int runs = 0;
  EXPECT_EQ(log.ApplyOnce(1, 3,
                          [&] {
                            ++runs;
                            return int64_t{1};
                          }),
            -ESTALE);
  EXPECT_EQ(runs, 0);
}

TEST(WriteLogTest, ClientsBeyondTheBoundAreForgottenOldestFirst) {
  WriteLog log;
  for (uint64_t client = 1; client <= WriteLog::kClients + 1; ++client) {
    log.ApplyOnce(client, 1, [] { return int64_t{1}; });
  }
  // Client 1 was the least recently seen: forgotten, so its seq 1 runs
  // again (a new client state); the most recent one's does not.
  int runs = 0;
  log.ApplyOnce(WriteLog::kClients + 1, 1, [&] {
    ++runs;
    return int64_t{1};
  });
  EXPECT_EQ(runs, 0);
  log.ApplyOnce(1, 1, [&] {
    ++runs;
    return int64_t{1};
  });
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace fgds::remote
