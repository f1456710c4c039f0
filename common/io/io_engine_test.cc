#include "common/io/io_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "common/io/inline_engine.h"
#include "common/io/uring_engine.h"
#include "gtest/gtest.h"

namespace fgds::io {
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
// kUringSpin: io_uring workers that poll before sleeping.
enum class Kind { kUring, kUringSpin, kInline };

std::unique_ptr<IoEngine> MakeEngine(Kind kind) {
  IoEngineOptions options;
  options.use_io_uring = kind != Kind::kInline;
  options.spin_us = kind == Kind::kUringSpin ? 50 : 0;
  options.queue_depth = 8;  // small, so the tests exercise a full queue
  options.workers = 2;
  // Small planning limits, so that short tests merge, split and spread.
  options.merge_bytes = 64 << 10;
  options.split_bytes = 16 << 10;
  options.spread_bytes = 8 << 10;
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

TEST_P(IoEngineTest, FsyncAndFdatasyncReportZeroOrErrno) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  char data[4096] = {1, 2, 3};
  ASSERT_EQ(
      SubmitAndWait(*engine, IoOp::kWrite, file.fd(), data, sizeof(data), 0),
      4096);
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kFsync, file.fd(), nullptr, 0, 0), 0);
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kFdatasync, file.fd(), nullptr, 0, 0),
            0);
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kFsync, -1, nullptr, 0, 0), -EBADF);
}

// Collects one batch's results.
struct BatchResults {
  struct Slot : IoCompletion {
    std::counting_semaphore<1024>* done = nullptr;
    int64_t result = INT64_MIN;
    int calls = 0;
    void Complete(int64_t r) override {
      result = r;
      ++calls;
      done->release();
    }
  };
  explicit BatchResults(size_t n) : slots(n) {
    for (Slot& s : slots) s.done = &done;
  }
  void Wait() {
    for (size_t i = 0; i < slots.size(); ++i) done.acquire();
  }
  std::counting_semaphore<1024> done{0};
  std::vector<Slot> slots;
};

// Continuing requests merge, long ones split, the pieces spread over the
// workers: each request still gets its own bytes and result, including a
// unit that runs into end of file and one whose file is unusable.
TEST_P(IoEngineTest, MergedAndSplitRequestsGetTheirOwnResults) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  std::vector<char> data(200000);
  std::mt19937 rng(3);
  for (char& c : data) c = static_cast<char>(rng());
  ASSERT_EQ(pwrite(file.fd(), data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));

  std::vector<char> out(400000, 'x');
  std::vector<IoRequest> batch;
  BatchResults results(31);  // the requests added below
  auto add = [&](int fd, size_t buf_off, size_t len, uint64_t off) {
    const size_t i = batch.size();
    batch.push_back(
        {IoOp::kRead, fd, out.data() + buf_off, len, off, &results.slots[i]});
  };
  // 24 continuing 4 KiB reads (merge into units of 64 KiB).
  for (size_t i = 0; i < 24; ++i) add(file.fd(), i * 4096, 4096, i * 4096);
  // One 100000-byte read (split into 16 KiB pieces).
  add(file.fd(), 100000, 100000, 50000);
  // Continuing reads across end of file: full, short, zero, zero.
  add(file.fd(), 210000, 6000, 190000);
  add(file.fd(), 216000, 6000, 196000);
  add(file.fd(), 222000, 6000, 202000);
  add(file.fd(), 228000, 6000, 208000);
  // Continuing reads of a descriptor that is not open.
  add(-1, 300000, 4096, 0);
  add(-1, 304096, 4096, 4096);
  ASSERT_EQ(batch.size(), results.slots.size());
  engine->Submit(batch);
  results.Wait();

  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(results.slots[i].result, 4096) << i;
    EXPECT_EQ(std::memcmp(out.data() + i * 4096, data.data() + i * 4096, 4096),
              0)
        << i;
  }
  EXPECT_EQ(results.slots[24].result, 100000);
  EXPECT_EQ(std::memcmp(out.data() + 100000, data.data() + 50000, 100000), 0);
  EXPECT_EQ(results.slots[25].result, 6000);
  EXPECT_EQ(results.slots[26].result, 4000);
  EXPECT_EQ(std::memcmp(out.data() + 210000, data.data() + 190000, 10000), 0);
  EXPECT_EQ(results.slots[27].result, 0);
  EXPECT_EQ(results.slots[28].result, 0);
  EXPECT_EQ(results.slots[29].result, -EBADF);
  EXPECT_EQ(results.slots[30].result, -EBADF);
  for (const auto& slot : results.slots) EXPECT_EQ(slot.calls, 1);
}

// A long write split into pieces lands whole, in order.
TEST_P(IoEngineTest, SplitWriteLandsWhole) {
  auto engine = MakeEngine(GetParam());
  TempFile file;
  std::vector<char> data(1 << 20);
  std::mt19937 rng(5);
  for (char& c : data) c = static_cast<char>(rng());
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kWrite, file.fd(), data.data(),
                          data.size(), 12345),
            static_cast<int64_t>(data.size()));
  std::vector<char> back(data.size());
  ASSERT_EQ(pread(file.fd(), back.data(), back.size(), 12345),
            static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, data);
}

INSTANTIATE_TEST_SUITE_P(Engines, IoEngineTest,
                         ::testing::Values(Kind::kUring, Kind::kUringSpin,
                                           Kind::kInline),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case Kind::kUring:
                               return "io_uring";
                             case Kind::kUringSpin:
                               return "io_uring_spin";
                             default:
                               return "inline";
                           }
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
}  // namespace fgds::io
