#include "backend/io_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "backend/inline_engine.h"
#include "backend/uring_engine.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

class TempFile {
 public:
  TempFile() {
    char path[] = "/tmp/fgds-engine-test.XXXXXX";
    fd_ = mkstemp(path);
    path_ = path;
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string path_;
};

// Both engines must behave the same; the test runs against each.
enum class Kind { kUring, kInline };

std::unique_ptr<IoEngine> MakeEngine(Kind kind) {
  IoEngineOptions options;
  options.use_io_uring = kind == Kind::kUring;
  options.queue_depth = 8;  // small, so the tests exercise a full queue
  options.rings = 2;
  return CreateIoEngine(options);
}

class IoEngineTest : public ::testing::TestWithParam<Kind> {};

TEST_P(IoEngineTest, WriteThenReadRoundTrips) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  std::string data(300000, '\0');
  std::mt19937 rng(1);
  for (char& c : data) c = static_cast<char>(rng());
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kWrite, file.fd(), data.data(),
                          data.size(), 4096),
            static_cast<int64_t>(data.size()));
  std::string back(data.size(), '\0');
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, file.fd(), back.data(),
                          back.size(), 4096),
            static_cast<int64_t>(data.size()));
  EXPECT_EQ(back, data);
}

TEST_P(IoEngineTest, ReadPastEndIsShortThenZero) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  ASSERT_EQ(pwrite(file.fd(), "abcdef", 6, 0), 6);
  char buf[16];
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, file.fd(), buf, sizeof(buf), 2),
            4);
  EXPECT_EQ(std::memcmp(buf, "cdef", 4), 0);
  EXPECT_EQ(
      SubmitAndWait(*engine, IoOp::kRead, file.fd(), buf, sizeof(buf), 100), 0);
}

TEST_P(IoEngineTest, ZeroLengthCompletes) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  char buf[1];
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, file.fd(), buf, 0, 0), 0);
}

TEST_P(IoEngineTest, BadFdReportsEbadf) {
  auto engine = MakeEngine(GetParam());
  char buf[8];
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, -1, buf, sizeof(buf), 0),
            -EBADF);
}

TEST_P(IoEngineTest, WriteToReadOnlyFdFails) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  int fd =
      open(("/proc/self/fd/" + std::to_string(file.fd())).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  char buf[8] = {};
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kWrite, fd, buf, sizeof(buf), 0),
            -EBADF);
  close(fd);
}

// Many threads, many more requests than the queue holds, batches of several:
// every completion arrives exactly once with the right data.
TEST_P(IoEngineTest, ConcurrentBatchesCompleteExactlyOnce) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  constexpr int kBlocks = 512;
  constexpr size_t kBlock = 4096;
  std::vector<char> data(kBlocks * kBlock);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  ASSERT_EQ(pwrite(file.fd(), data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));

  struct Counting : IoCompletion {
    std::atomic<int>* calls;
    std::counting_semaphore<kBlocks>* done;
    int64_t result = -1;
    void Complete(int64_t r) override {
      result = r;
      calls->fetch_add(1);
      done->release();
    }
  };
  std::atomic<int> calls{0};
  std::counting_semaphore<kBlocks> done(0);
  std::vector<Counting> completions(kBlocks);
  std::vector<char> out(data.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int b = t; b < kBlocks; b += 8) {
        IoRequest batch[2];
        for (int k = 0; k < 2; ++k) {
          int block = b + k * 4;
          completions[block].calls = &calls;
          completions[block].done = &done;
          batch[k] = {IoOp::kRead, file.fd(),      out.data() + block * kBlock,
                      kBlock,      block * kBlock, &completions[block]};
        }
        engine->Submit(batch);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kBlocks; ++i) done.acquire();
  EXPECT_EQ(calls.load(), kBlocks);
  for (const Counting& c : completions) EXPECT_EQ(c.result, int64_t{kBlock});
  EXPECT_EQ(out, data);
}

INSTANTIATE_TEST_SUITE_P(Engines, IoEngineTest,
                         ::testing::Values(Kind::kUring, Kind::kInline),
                         [](const auto& param_info) {
                           return param_info.param == Kind::kUring ? "io_uring"
                                                                   : "inline";
                         });

TEST(IoEngineFactoryTest, DisabledUringFallsBackWithReason) {
  IoEngineOptions options;
  options.use_io_uring = false;
  std::string reason;
  auto engine = CreateIoEngine(options, &reason);
  EXPECT_STREQ(engine->name(), "inline");
  EXPECT_FALSE(reason.empty());
}

}  // namespace
}  // namespace fgds::backend
