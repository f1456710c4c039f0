// The io_uring engine under injected faults (fault_uring_os.h): ring setup
// failing, submissions failing once, several times, always or only in part,
// waits failing. Whatever fails, every request of every batch completes
// exactly once, with its result or an error, and no worker spins or hangs.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/io/fault_uring_os.h"
#include "common/io/io_engine.h"
#include "common/io/uring_engine.h"
#include "gtest/gtest.h"

namespace fgds::io {
namespace {

using Fault = FaultUringOs::Fault;

constexpr size_t kBlock = 4096;
constexpr size_t kFileBlocks = 16;

// Request i of SubmitReads: every third is four blocks long (split into
// pieces); the offsets cycle through the file, so some run into its end.
size_t LengthOf(size_t i) { return i % 3 == 0 ? 4 * kBlock : kBlock; }
uint64_t OffsetOf(size_t i) { return (i % kFileBlocks) * kBlock; }
// What request i moves when nothing fails.
int64_t Expected(size_t i) {
  return static_cast<int64_t>(
      std::min<uint64_t>(LengthOf(i), kFileBlocks * kBlock - OffsetOf(i)));
}

class TempFile {
 public:
  explicit TempFile(size_t size) {
    char path[] = "/tmp/fgds-uring-fault-test.XXXXXX";
    fd_ = mkstemp(path);
    unlink(path);
    std::vector<char> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(i * 13 + 1);
    EXPECT_EQ(pwrite(fd_, data.data(), size, 0), static_cast<ssize_t>(size));
  }
  ~TempFile() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Counts every completion of one request; the engine must call it once.
struct Counted : IoCompletion {
  void Complete(int64_t r) override {
    result.store(r);
    calls.fetch_add(1);
    total->fetch_add(1);
  }
  std::atomic<int64_t> result{INT64_MIN};
  std::atomic<int> calls{0};
  std::atomic<int>* total = nullptr;
};

// Requests and their completions; checks each completed exactly once.
class Requests {
 public:
  explicit Requests(size_t n) : completions_(n) {
    for (Counted& c : completions_) c.total = &total_;
  }
  Counted& operator[](size_t i) { return completions_[i]; }
  size_t size() const { return completions_.size(); }
  // Waits (bounded) until every request completed at least once.
  bool WaitAll(std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (total_.load() < static_cast<int>(completions_.size())) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
  // REQUIRES: the engine is gone (nothing can complete any more).
  void ExpectEachOnce() {
    for (size_t i = 0; i < completions_.size(); ++i) {
      EXPECT_EQ(completions_[i].calls.load(), 1) << "request " << i;
    }
  }
  int Count(int64_t result) {
    int n = 0;
    for (const Counted& c : completions_) n += c.result.load() == result;
    return n;
  }
  // How many of SubmitReads' requests got their whole result.
  int CountExpected() {
    int n = 0;
    for (size_t i = 0; i < completions_.size(); ++i) {
      n += completions_[i].result.load() == Expected(i);
    }
    return n;
  }

 private:
  std::atomic<int> total_{0};
  std::vector<Counted> completions_;
};

IoEngineOptions Options(FaultUringOs* os, int workers = 2) {
  IoEngineOptions options;
  options.uring_os = os;
  options.workers = workers;
  options.queue_depth = 8;  // small: a full queue and a backlog
  options.merge_bytes = 16 << 10;
  options.split_bytes = 8 << 10;
  options.spread_bytes = 4 << 10;
  return options;
}

// An engine whose workers have started and gone to sleep: their first
// submission (the wake poll alone) is behind them, so every submission a
// test's fault hits carries requests.
std::unique_ptr<UringEngine> MakeEngine(FaultUringOs* os, int workers = 2) {
  auto engine = UringEngine::Create(Options(os, workers));
  EXPECT_TRUE(engine.ok()) << engine.status();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (os->submit_calls() < workers &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return engine.ok() ? *std::move(engine) : nullptr;
}

// Submits `requests` as batches of `batch` scattered reads (some merge,
// some split) from `threads` threads.
void SubmitReads(IoEngine& engine, int fd, Requests& requests,
                 std::vector<char>& out, int threads, size_t batch) {
  std::vector<std::thread> submitters;
  for (int t = 0; t < threads; ++t) {
    submitters.emplace_back([&, t] {
      for (size_t first = t * batch; first < requests.size();
           first += threads * batch) {
        std::vector<IoRequest> reqs;
        for (size_t i = first; i < std::min(first + batch, requests.size());
             ++i) {
          reqs.push_back({IoOp::kRead, fd, out.data() + i * 4 * kBlock,
                          LengthOf(i), OffsetOf(i), &requests[i]});
        }
        engine.Submit(reqs);
      }
    });
  }
  for (std::thread& s : submitters) s.join();
}

// CPU time of the whole process.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// While nothing is submitted, no worker may be busy: it sleeps.
void ExpectIdle(const FaultUringOs& os) {
  const int submits = os.submit_calls();
  const int waits = os.wait_calls();
  const double cpu = CpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(os.submit_calls(), submits) << "a worker keeps submitting";
  EXPECT_LE(os.wait_calls() - waits, 30) << "a worker keeps waiting";
  EXPECT_LT(CpuSeconds() - cpu, 0.1) << "a worker spins";
}

TEST(UringFaultTest, RingSetupFailureFallsBackToInline) {
  FaultUringOs os;
  os.FailQueueInit({-ENOMEM, -1});
  std::string reason;
  auto engine = CreateIoEngine(Options(&os), &reason);
  EXPECT_STREQ(engine->name(), "inline");
  EXPECT_NE(reason.find("io_uring_queue_init"), std::string::npos) << reason;
  TempFile file(kFileBlocks * kBlock);
  char buf[kBlock];
  EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, file.fd(), buf, kBlock, 0),
            int64_t{kBlock});
}

TEST(UringFaultTest, LaterWorkerSetupFailureUndoesTheEarlierOnes) {
  FaultUringOs os;
  os.FailQueueInit({-EMFILE, -1, /*skip=*/2});
  auto engine = UringEngine::Create(Options(&os, 4));
  EXPECT_FALSE(engine.ok());
  EXPECT_EQ(os.rings(), 0);  // the two workers made were torn down
  os.Heal();
  os.FailEventFd({-EMFILE, 1});
  engine = UringEngine::Create(Options(&os, 4));
  EXPECT_FALSE(engine.ok());
  EXPECT_NE(engine.status().ToString().find("eventfd"), std::string::npos);
  EXPECT_EQ(os.rings(), 0);  // its ring was torn down too
}

// The one refused submission fails what it carried, nothing else; later
// batches all work.
TEST(UringFaultTest, SubmitFailingOnceFailsOnlyWhatItCarried) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  std::vector<char> out(256 * 4 * kBlock);
  Requests requests(256);
  {
    auto engine = MakeEngine(&os);
    os.FailSubmit({-ENOMEM, 1, /*skip=*/2});
    SubmitReads(*engine, file.fd(), requests, out, 4, 4);
    ASSERT_TRUE(requests.WaitAll());
    ExpectIdle(os);
  }
  requests.ExpectEachOnce();
  EXPECT_EQ(os.submit_failures(), 1);
  // A request split into pieces may have lost only some: it reports the
  // bytes before the first lost piece, as pread would.
  int partial = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t r = requests[i].result.load();
    EXPECT_TRUE(r == -ENOMEM || (r > 0 && r <= Expected(i) && r % kBlock == 0))
        << r;
    partial += r > 0 && r < Expected(i);
  }
  EXPECT_GE(requests.Count(-ENOMEM) + partial, 1);
  EXPECT_LT(requests.CountExpected(), 256);
}

TEST(UringFaultTest, SubmitFailingAlwaysFailsEveryRequestAndWorkersSleep) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  std::vector<char> out(200 * 4 * kBlock);
  Requests requests(200);
  {
    auto engine = MakeEngine(&os);
    os.FailSubmit({-EIO, -1});
    SubmitReads(*engine, file.fd(), requests, out, 4, 5);
    ASSERT_TRUE(requests.WaitAll());
    ExpectIdle(os);
  }
  requests.ExpectEachOnce();
  EXPECT_EQ(requests.Count(-EIO), 200);
}

TEST(UringFaultTest, SubmitFailingMidwayThenRecovering) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  std::vector<char> out(300 * 4 * kBlock);
  Requests requests(300);
  {
    auto engine = MakeEngine(&os, 3);
    os.FailSubmit({-EBADF, 5, /*skip=*/10});
    SubmitReads(*engine, file.fd(), requests, out, 3, 3);
    ASSERT_TRUE(requests.WaitAll());
    // Healed: a request after the faults works.
    char buf[kBlock];
    EXPECT_EQ(SubmitAndWait(*engine, IoOp::kRead, file.fd(), buf, kBlock, 0),
              int64_t{kBlock});
  }
  requests.ExpectEachOnce();
  EXPECT_EQ(os.submit_failures(), 5);
  // A split request may fail after some of its pieces moved: then it
  // reports those bytes, as pread would.
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t r = requests[i].result.load();
    EXPECT_TRUE(r == -EBADF || (r > 0 && r <= Expected(i) && r % kBlock == 0))
        << r;
  }
  EXPECT_LT(requests.CountExpected(), 300);
}

TEST(UringFaultTest, PartialSubmissionsCompleteEverything) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  std::vector<char> out(200 * 4 * kBlock);
  Requests requests(200);
  {
    auto engine = MakeEngine(&os);
    os.LimitSubmit(2);
    SubmitReads(*engine, file.fd(), requests, out, 2, 8);
    ASSERT_TRUE(requests.WaitAll());
  }
  requests.ExpectEachOnce();
  EXPECT_EQ(requests.CountExpected(), 200);
}

// A pipe read waits in the kernel until the test writes: I/O the kernel
// holds while submissions or waits fail.
class Pipe {
 public:
  Pipe() { EXPECT_EQ(pipe2(fds_, O_CLOEXEC), 0); }
  ~Pipe() {
    close(fds_[0]);
    close(fds_[1]);
  }
  int read_fd() const { return fds_[0]; }
  void Write(size_t n) {
    std::vector<char> data(n, 'p');
    EXPECT_EQ(write(fds_[1], data.data(), n), static_cast<ssize_t>(n));
  }

 private:
  int fds_[2];
};

// Refused for now (EAGAIN) while the kernel holds a request: the entries
// wait for its completion instead of failing, then go in.
TEST(UringFaultTest, TransientRefusalWaitsForIoInFlight) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  Pipe pipe;
  Requests held(1);
  Requests later(4);
  std::vector<char> out(8 * kBlock);
  {
    auto engine = MakeEngine(&os, 1);
    IoRequest slow{IoOp::kRead, pipe.read_fd(), out.data(), 16, 0, &held[0]};
    engine->Submit({&slow, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    os.FailSubmit({-EAGAIN, 1});
    std::vector<IoRequest> reqs;
    for (size_t i = 0; i < later.size(); ++i) {
      reqs.push_back({IoOp::kRead, file.fd(), out.data() + (i + 1) * kBlock,
                      kBlock, i * 2 * kBlock, &later[i]});
    }
    engine->Submit(reqs);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(later.Count(INT64_MIN), 4) << "refused entries failed early";
    pipe.Write(16);
    ASSERT_TRUE(held.WaitAll());
    ASSERT_TRUE(later.WaitAll());
  }
  held.ExpectEachOnce();
  later.ExpectEachOnce();
  EXPECT_EQ(held[0].result.load(), 16);
  EXPECT_EQ(later.Count(kBlock), 4);
}

// Refused for good while a request is held: the held one still completes
// through the ring, the refused ones fail once it has.
TEST(UringFaultTest, PersistentRefusalFailsOnceNothingIsHeld) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  Pipe pipe;
  Requests held(1);
  Requests later(4);
  std::vector<char> out(8 * kBlock);
  {
    auto engine = MakeEngine(&os, 1);
    IoRequest slow{IoOp::kRead, pipe.read_fd(), out.data(), 16, 0, &held[0]};
    engine->Submit({&slow, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    os.FailSubmit({-EAGAIN, -1});
    std::vector<IoRequest> reqs;
    for (size_t i = 0; i < later.size(); ++i) {
      reqs.push_back({IoOp::kRead, file.fd(), out.data() + (i + 1) * kBlock,
                      kBlock, i * 2 * kBlock, &later[i]});
    }
    engine->Submit(reqs);
    pipe.Write(16);
    ASSERT_TRUE(held.WaitAll());
    ASSERT_TRUE(later.WaitAll());
    ExpectIdle(os);
  }
  held.ExpectEachOnce();
  later.ExpectEachOnce();
  EXPECT_EQ(held[0].result.load(), 16);
  EXPECT_EQ(later.Count(-EAGAIN), 4);
}

// Waiting through the ring fails from the start: the worker sleeps in
// poll(2) instead, and everything completes with its result.
TEST(UringFaultTest, WaitFailingFallsBackToPoll) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  Pipe pipe;
  Requests held(1);
  Requests requests(120);
  std::vector<char> out(120 * 4 * kBlock);
  std::vector<char> slow_buf(16);
  {
    auto engine = MakeEngine(&os);
    os.FailWait({-EBADF, -1});
    IoRequest slow{IoOp::kRead, pipe.read_fd(), slow_buf.data(), 16,
                   0,           &held[0]};
    engine->Submit({&slow, 1});
    SubmitReads(*engine, file.fd(), requests, out, 3, 4);
    ASSERT_TRUE(requests.WaitAll());
    ExpectIdle(os);  // with the pipe read held in the kernel
    pipe.Write(16);
    ASSERT_TRUE(held.WaitAll());
    ExpectIdle(os);
  }
  held.ExpectEachOnce();
  requests.ExpectEachOnce();
  EXPECT_EQ(held[0].result.load(), 16);
  EXPECT_EQ(requests.CountExpected(), 120);
}

// Stopping an engine whose every submission fails neither hangs nor
// leaves a request behind.
TEST(UringFaultTest, DestroyWhileFailingDoesNotHang) {
  FaultUringOs os;
  TempFile file(kFileBlocks * kBlock);
  std::vector<char> out(64 * 4 * kBlock);
  Requests requests(64);
  {
    auto engine = MakeEngine(&os);
    os.FailSubmit({-EIO, -1});
    os.FailWait({-EIO, -1});
    SubmitReads(*engine, file.fd(), requests, out, 2, 8);
  }
  EXPECT_TRUE(requests.WaitAll(std::chrono::seconds(0)));
  requests.ExpectEachOnce();
  EXPECT_EQ(os.rings(), 0);
}

// Every allocation Submit makes fails: batches that need one (planning
// always does) fail whole, each request once with -ENOMEM, on the calling
// thread, and Submit does not throw; nothing leaks (LeakSanitizer), no
// worker is left busy, and the engine works once memory is back.
TEST(UringFaultTest, AllocationFailingAlwaysFailsBatchesWithEnomem) {
  TempFile file(kFileBlocks * kBlock);
  FaultUringOs os;
  {
    auto engine = MakeEngine(&os);
    ASSERT_NE(engine, nullptr);
    os.FailAllocation({-ENOMEM, -1, 0});
    Requests requests(96);
    std::vector<char> out(requests.size() * 4 * kBlock);
    ASSERT_NO_THROW(SubmitReads(*engine, file.fd(), requests, out, 3, 8));
    ASSERT_TRUE(requests.WaitAll());
    EXPECT_EQ(requests.Count(-ENOMEM), static_cast<int>(requests.size()));
    EXPECT_GT(os.allocation_failures(), 0);
    ExpectIdle(os);

    os.Heal();
    Requests again(96);
    SubmitReads(*engine, file.fd(), again, out, 3, 8);
    ASSERT_TRUE(again.WaitAll());
    EXPECT_EQ(again.CountExpected(), static_cast<int>(again.size()));
    engine.reset();
    requests.ExpectEachOnce();
    again.ExpectEachOnce();
  }
  EXPECT_EQ(os.rings(), 0);
}

// One allocation fails, at every position in turn: after the plan, after
// some trackers and pieces were made. The batch it hits fails whole (what
// was made is freed: LeakSanitizer checks), the others are served, every
// request completes exactly once.
TEST(UringFaultTest, AllocationFailingMidBatchFailsOnlyThatBatch) {
  TempFile file(kFileBlocks * kBlock);
  FaultUringOs os;
  auto engine = MakeEngine(&os);
  ASSERT_NE(engine, nullptr);
  constexpr size_t kBatch = 12;  // every third request is split
  std::vector<char> out(kBatch * 4 * kBlock);
  bool hit_last = false;
  for (int skip = 0; skip < 40 && !hit_last; ++skip) {
    os.FailAllocation({-ENOMEM, 1, skip});
    const int failures = os.allocation_failures();
    Requests requests(kBatch);
    ASSERT_NO_THROW(SubmitReads(*engine, file.fd(), requests, out, 1, kBatch));
    ASSERT_TRUE(requests.WaitAll());
    if (os.allocation_failures() > failures) {
      EXPECT_EQ(requests.Count(-ENOMEM), static_cast<int>(kBatch))
          << "skip " << skip;
    } else {
      hit_last = true;  // the batch needed fewer allocations than skip
      EXPECT_EQ(requests.CountExpected(), static_cast<int>(kBatch));
    }
    os.Heal();
    // Each request once, even the ones of a failed batch (none of which
    // was handed to a worker).
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    requests.ExpectEachOnce();
  }
  EXPECT_TRUE(hit_last) << "the fault never missed a batch";
}

// The worker's queues are lists through the items: FIFO, splicing, and
// the rest of a short transfer going first, with no allocation at all.
TEST(UringItemListTest, FifoPushFrontAndSplice) {
  struct Nop : IoCompletion {
    void Complete(int64_t) override {}
  };
  Nop a, b, c, d;
  UringItemList list, other;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.PopFront(), nullptr);
  list.PushBack(&a);
  list.PushBack(&b);
  other.PushBack(&c);
  list.Splice(&other);
  EXPECT_TRUE(other.empty());
  list.PushFront(&d);
  EXPECT_EQ(list.PopFront(), &d);
  EXPECT_EQ(list.PopFront(), &a);
  EXPECT_EQ(list.PopFront(), &b);
  EXPECT_EQ(list.PopFront(), &c);
  EXPECT_TRUE(list.empty());
  other.Splice(&list);  // empty into empty
  EXPECT_TRUE(other.empty());
}

}  // namespace
}  // namespace fgds::io
