#include "backend/ceph/guarded_backend.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

using std::chrono::milliseconds;

// Storage that answers data calls only once opened (a cluster that does
// not answer, then comes back): reads return 'r' bytes, writes are kept.
// The namespace is not used by these tests.
class StallingStore : public Backend {
 public:
  struct State {
    fgds::Mutex mu;
    fgds::CondVar cv;
    bool open ABSL_GUARDED_BY(mu) = true;
    // While closed, only calls at this offset are held (kAll: every one).
    static constexpr uint64_t kAll = ~uint64_t{0};
    uint64_t held_offset ABSL_GUARDED_BY(mu) = kAll;
    std::string written ABSL_GUARDED_BY(mu);
    std::atomic<int> finished{0};
    std::atomic<int> running{0};

    // Holds every data call from now on (false), or lets the held ones and
    // later ones through (true).
    void SetOpen(bool now_open) {
      fgds::MutexLock lock(&mu);
      open = now_open;
      if (open) cv.SignalAll();
    }
    // Waits up to 2 s for `n` data calls to have finished (the caller
    // checks how many did).
    void AwaitFinished(int n) {
      for (int i = 0; i < 200 && finished.load() < n; ++i) {
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
  };
  explicit StallingStore(std::shared_ptr<State> state)
      : state_(std::move(state)) {}

  int64_t RunIo(const FileIoRequest& request, IoPath* path) override {
    ++state_->running;
    {
      fgds::MutexLock lock(&state_->mu);
      while (!state_->open && (state_->held_offset == State::kAll ||
                               state_->held_offset == request.offset)) {
        state_->cv.Wait(&state_->mu);
      }
      if (request.op == FileOp::kWrite) {
        state_->written.assign(request.buf, request.len);
      }
    }
    if (request.op == FileOp::kRead) memset(request.buf, 'r', request.len);
    *path = IoPath::kPageCache;
    ++state_->finished;
    return static_cast<int64_t>(request.len);
  }
  void SubmitIo(std::span<const FileIoRequest> batch) override {
    for (const FileIoRequest& r : batch) {
      IoPath path;
      int64_t res = RunIo(r, &path);
      r.completion->set_path(path);
      r.completion->Complete(res);
    }
  }

  NodeId root() const override { return 1; }
  std::string EngineName() const override { return "stalling"; }
  int Lookup(NodeId, const char*, Entry*) override { return -ENOSYS; }
  void Forget(NodeId, uint64_t) override {}
  int GetAttr(NodeId, struct stat*) override { return -ENOSYS; }
  int SetAttr(NodeId, const SetAttrRequest&, struct stat*) override {
    return -ENOSYS;
  }
  int ReadLink(NodeId, std::string*) override { return -ENOSYS; }
  int MkNod(const Caller&, NodeId, const char*, mode_t, dev_t,
            Entry*) override {
    return -ENOSYS;
  }
  int MkDir(const Caller&, NodeId, const char*, mode_t, Entry*) override {
    return -ENOSYS;
  }
  int SymLink(const Caller&, const char*, NodeId, const char*,
              Entry*) override {
    return -ENOSYS;
  }
  int Link(NodeId, NodeId, const char*, Entry*) override { return -ENOSYS; }
  int Unlink(NodeId, const char*) override { return -ENOSYS; }
  int RmDir(NodeId, const char*) override { return -ENOSYS; }
  int Rename(NodeId, const char*, NodeId, const char*, unsigned) override {
    return -ENOSYS;
  }
  int StatFs(NodeId, struct statvfs*) override { return -ENOSYS; }
  int SetXattr(NodeId, const char*, const void*, size_t, int) override {
    return -ENOSYS;
  }
  int GetXattr(NodeId, const char*, void*, size_t) override { return -ENOSYS; }
  int ListXattr(NodeId, char*, size_t) override { return -ENOSYS; }
  int RemoveXattr(NodeId, const char*) override { return -ENOSYS; }
  int Open(NodeId, int, File**) override { return -ENOSYS; }
  int Create(const Caller&, NodeId, const char*, mode_t, int, Entry*,
             File**) override {
    return -ENOSYS;
  }
  int Flush(File*) override { return 0; }
  void Release(File*) override {}
  int Fsync(File*, bool) override { return 0; }
  int Fallocate(File*, int, off_t, off_t) override { return -ENOSYS; }
  ssize_t CopyFileRange(File*, off_t, File*, off_t, size_t, unsigned) override {
    return -ENOSYS;
  }
  off_t Lseek(File*, off_t, int) override { return -ENOSYS; }
  bool KeepCache(File*) override { return false; }
  NodeId NodeOf(File*) override { return 0; }
  int OpenDir(NodeId, Dir**) override { return -ENOSYS; }
  int ReadDir(Dir*, off_t,
              const std::function<bool(const DirEntry&)>&) override {
    return -ENOSYS;
  }
  void ReleaseDir(Dir*) override {}
  int FsyncDir(Dir*, bool) override { return 0; }

 private:
  const std::shared_ptr<State> state_;
};

// A request's result, and the thread that completed it.
class Completion : public FileIoCompletion {
 public:
  void Complete(int64_t result) override {
    fgds::MutexLock lock(&mu_);
    thread_ = std::this_thread::get_id();
    result_ = result;
    done_ = true;
    ++calls_;
    cv_.Signal();
  }
  int64_t Wait(std::thread::id* thread = nullptr) {
    fgds::MutexLock lock(&mu_);
    while (!done_) cv_.Wait(&mu_);
    if (thread != nullptr) *thread = thread_;
    return result_;
  }
  int calls() {
    fgds::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  fgds::Mutex mu_;
  fgds::CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t result_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread::id thread_ ABSL_GUARDED_BY(mu_);
};

FileIoRequest Request(FileOp op, std::vector<char>& buf,
                      FileIoCompletion* completion = nullptr) {
  FileIoRequest r;
  r.op = op;
  r.buf = buf.data();
  r.len = buf.size();
  r.completion = completion;
  return r;
}

TEST(GuardedBackendTest, MovesTheBytesOfReadsAndWrites) {
  auto state = std::make_shared<StallingStore::State>();
  auto backend = GuardBackend(std::make_unique<StallingStore>(state), 4,
                              milliseconds(5000));
  std::vector<char> data(1 << 20, 'w');
  IoPath path;
  EXPECT_EQ(backend->RunIo(Request(FileOp::kWrite, data), &path), 1 << 20);
  EXPECT_EQ(path, IoPath::kPageCache);
  {
    fgds::MutexLock lock(&state->mu);
    EXPECT_EQ(state->written, std::string(1 << 20, 'w'));
  }
  std::vector<char> got(3 << 20, 'c');  // larger than a pooled buffer
  EXPECT_EQ(backend->RunIo(Request(FileOp::kRead, got), &path), 3 << 20);
  EXPECT_EQ(got, std::vector<char>(3 << 20, 'r'));
  std::vector<char> small(4096, 'c');
  Completion completion;
  FileIoRequest r = Request(FileOp::kRead, small, &completion);
  backend->SubmitIo({&r, 1});
  EXPECT_EQ(completion.Wait(), 4096);
  EXPECT_EQ(completion.path(), IoPath::kPageCache);
  EXPECT_EQ(small, std::vector<char>(4096, 'r'));
}

// The gate gives up on calls the store holds: their callers get ENOTCONN,
// and when the store answers later, not one byte lands in the callers'
// memory (which they may have reused by then), and a write stores the
// bytes it was given.
TEST(GuardedBackendTest, ACallGivenUpOnNeverTouchesTheCallersMemory) {
  auto state = std::make_shared<StallingStore::State>();
  state->SetOpen(false);
  std::vector<char> sync_buf(1 << 20, 'c');
  std::vector<char> async_buf(4096, 'c');
  std::vector<char> write_buf(8192, 'w');
  Completion completion, write_completion;
  // The gate leaves its inner backend to the parked calls (it never
  // deletes it once dead): deleted here once they are done.
  auto* store = new StallingStore(state);
  {
    auto backend =
        GuardBackend(std::unique_ptr<Backend>(store), 4, milliseconds(300));
    FileIoRequest r = Request(FileOp::kRead, async_buf, &completion);
    backend->SubmitIo({&r, 1});
    FileIoRequest w = Request(FileOp::kWrite, write_buf, &write_completion);
    backend->SubmitIo({&w, 1});
    IoPath path = IoPath::kDirect;
    EXPECT_EQ(backend->RunIo(Request(FileOp::kRead, sync_buf), &path),
              -ENOTCONN);
    EXPECT_EQ(path, IoPath::kNone);
    EXPECT_EQ(completion.Wait(), -ENOTCONN);
    EXPECT_EQ(completion.path(), IoPath::kNone);
    EXPECT_EQ(write_completion.Wait(), -ENOTCONN);
    // The writer reuses its memory, as it may once answered.
    memset(write_buf.data(), 'X', write_buf.size());
    // The three calls are parked in the store, on gate threads.
    EXPECT_EQ(state->running.load(), 3);
  }
  state->SetOpen(true);
  state->AwaitFinished(3);
  ASSERT_EQ(state->finished.load(), 3);
  delete store;
  EXPECT_EQ(sync_buf, std::vector<char>(1 << 20, 'c'));
  EXPECT_EQ(async_buf, std::vector<char>(4096, 'c'));
  // The late write wrote what the caller gave, not what it reused.
  fgds::MutexLock lock(&state->mu);
  EXPECT_EQ(state->written, std::string(8192, 'w'));
}

// With here_calls, a read submitted alone into plain memory runs on the
// submitting thread (at most here_calls at once; the others on the gate's
// threads), bounced all the same: when the store hangs, the request is
// answered ENOTCONN from the watchdog while its thread is still held, and
// the late answer never reaches the caller's memory.
TEST(GuardedBackendTest, ReadsRunOnTheSubmittingThreadWithinTheBudget) {
  auto state = std::make_shared<StallingStore::State>();
  auto* store = new StallingStore(state);
  auto backend = GuardBackend(std::unique_ptr<Backend>(store), 2,
                              milliseconds(400), /*here_calls=*/1);
  std::vector<char> buf(4096, 'c');
  Completion here;
  FileIoRequest r = Request(FileOp::kRead, buf, &here);
  backend->SubmitIo({&r, 1});
  std::thread::id answered_on;
  EXPECT_EQ(here.Wait(&answered_on), 4096);
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  EXPECT_EQ(buf, std::vector<char>(4096, 'r'));
  // Writes go to the gate's threads.
  std::vector<char> data(4096, 'w');
  Completion write;
  FileIoRequest w = Request(FileOp::kWrite, data, &write);
  backend->SubmitIo({&w, 1});
  EXPECT_EQ(write.Wait(&answered_on), 4096);
  EXPECT_NE(answered_on, std::this_thread::get_id());

  // The store hangs: one read holds its thread (the budget), the next goes
  // to a gate thread; both are answered ENOTCONN.
  state->SetOpen(false);
  std::vector<char> held_buf(4096, 'c'), other_buf(4096, 'c');
  Completion held, other;
  std::atomic<bool> returned{false};
  std::thread holder([&] {
    FileIoRequest h = Request(FileOp::kRead, held_buf, &held);
    backend->SubmitIo({&h, 1});
    returned = true;
  });
  while (state->running.load() < 3)
    std::this_thread::sleep_for(milliseconds(1));
  FileIoRequest o = Request(FileOp::kRead, other_buf, &other);
  backend->SubmitIo({&o, 1});  // returns at once: not on this thread
  EXPECT_EQ(held.Wait(&answered_on), -ENOTCONN);
  EXPECT_NE(answered_on, std::this_thread::get_id());
  EXPECT_EQ(other.Wait(&answered_on), -ENOTCONN);
  EXPECT_FALSE(returned.load());
  EXPECT_TRUE(backend->LeftThreadsBehind());
  // The store answers late (the holding thread then comes back, into the
  // backend: so it goes after).
  state->SetOpen(true);
  holder.join();
  backend.reset();  // dead: leaves the store to the parked calls
  state->AwaitFinished(4);
  ASSERT_EQ(state->finished.load(), 4);
  delete store;
  EXPECT_EQ(held_buf, std::vector<char>(4096, 'c'));
  EXPECT_EQ(other_buf, std::vector<char>(4096, 'c'));
}

// The value of `key`=N in the backend's stats text (-1: absent).
int64_t StatOf(const Backend& backend, const std::string& key) {
  const std::string text = backend.StatsText();
  const size_t at = text.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + key.size() + 2));
}

// A batch of fast requests (a usrbio ring's) is one submission to the
// gate: a thread or a few serve it, not one hand-off per request. Each
// request completes once, with its bytes.
TEST(GuardedBackendTest, ABatchOfFastRequestsTakesFewHandOffs) {
  auto state = std::make_shared<StallingStore::State>();
  auto backend = GuardBackend(std::make_unique<StallingStore>(state), 32,
                              milliseconds(5000));
  constexpr int kRequests = 64;
  std::vector<std::vector<char>> bufs(kRequests, std::vector<char>(4096, 'c'));
  std::vector<Completion> completions(kRequests);
  std::vector<FileIoRequest> batch;
  for (int i = 0; i < kRequests; ++i) {
    batch.push_back(Request(FileOp::kRead, bufs[i], &completions[i]));
    batch.back().offset = uint64_t(i) * 4096;
  }
  const int64_t wakes_before = StatOf(*backend, "wakes");
  ASSERT_GE(wakes_before, 0) << backend->StatsText();
  backend->SubmitIo(batch);
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(completions[i].Wait(), 4096) << i;
    EXPECT_EQ(completions[i].calls(), 1);
    EXPECT_EQ(completions[i].path(), IoPath::kPageCache);
    EXPECT_EQ(bufs[i], std::vector<char>(4096, 'r')) << i;
  }
  const int64_t wakes = StatOf(*backend, "wakes") - wakes_before;
  printf("gate: a batch of %d fast requests woke %lld gate threads\n",
         kRequests, static_cast<long long>(wakes));
  EXPECT_GE(wakes, 1);
  // How many more than one depends on how fast a woken thread comes
  // (3-17 of 64 under TSan, 2-5 in a release build here): each one that finds
  // calls still waiting wakes the next. One per request before batches.
  EXPECT_LE(wakes, kRequests / 2) << "one hand-off per request, or close";
  EXPECT_EQ(StatOf(*backend, "calls"), kRequests);
}

// A request of a batch that the storage holds does not hold back the
// batch's others: they complete while it waits.
TEST(GuardedBackendTest, ASlowRequestOfABatchHoldsBackNoOther) {
  auto state = std::make_shared<StallingStore::State>();
  {
    fgds::MutexLock lock(&state->mu);
    state->held_offset = 0;
  }
  state->SetOpen(false);
  auto backend = GuardBackend(std::make_unique<StallingStore>(state), 4,
                              milliseconds(10000));
  constexpr int kRequests = 8;
  std::vector<std::vector<char>> bufs(kRequests, std::vector<char>(4096, 'c'));
  std::vector<Completion> completions(kRequests);
  std::vector<FileIoRequest> batch;
  for (int i = 0; i < kRequests; ++i) {
    batch.push_back(Request(FileOp::kRead, bufs[i], &completions[i]));
    batch.back().offset = uint64_t(i) * 4096;  // the first one is held
  }
  backend->SubmitIo(batch);
  for (int i = 1; i < kRequests; ++i) {
    EXPECT_EQ(completions[i].Wait(), 4096) << i;
  }
  EXPECT_EQ(completions[0].calls(), 0);
  state->SetOpen(true);
  EXPECT_EQ(completions[0].Wait(), 4096);
  EXPECT_EQ(bufs[0], std::vector<char>(4096, 'r'));
}

// The gate gives up on a batch whose requests the storage holds: every
// request of it is answered ENOTCONN exactly once (those running, those
// queued behind them), and when the storage answers later, none writes
// its caller's memory; the queued ones never reach the storage.
TEST(GuardedBackendTest, ABatchGivenUpOnIsAnsweredOnceAndLeavesTheMemory) {
  auto state = std::make_shared<StallingStore::State>();
  state->SetOpen(false);
  constexpr int kRequests = 8;
  std::vector<std::vector<char>> bufs(kRequests, std::vector<char>(4096, 'c'));
  std::vector<Completion> completions(kRequests);
  auto* store = new StallingStore(state);
  {
    auto backend =
        GuardBackend(std::unique_ptr<Backend>(store), 2, milliseconds(300));
    std::vector<FileIoRequest> batch;
    for (int i = 0; i < kRequests; ++i) {
      std::fill(bufs[i].begin(), bufs[i].end(), i % 2 ? 'w' : 'c');
      batch.push_back(Request(i % 2 ? FileOp::kWrite : FileOp::kRead, bufs[i],
                              &completions[i]));
    }
    backend->SubmitIo(batch);
    for (int i = 0; i < kRequests; ++i) {
      EXPECT_EQ(completions[i].Wait(), -ENOTCONN) << i;
      EXPECT_EQ(completions[i].path(), IoPath::kNone);
    }
    EXPECT_TRUE(backend->LeftThreadsBehind());
    // The callers reuse their memory, as they may once answered.
    for (int i = 1; i < kRequests; i += 2) {
      std::fill(bufs[i].begin(), bufs[i].end(), 'X');
    }
  }
  // Two gate threads: two requests reached the storage, the rest never.
  EXPECT_EQ(state->running.load(), 2);
  state->SetOpen(true);
  state->AwaitFinished(2);
  ASSERT_EQ(state->finished.load(), 2);
  std::this_thread::sleep_for(milliseconds(50));
  delete store;
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(completions[i].calls(), 1) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(bufs[i], std::vector<char>(4096, 'c')) << i;
    }
  }
  // A late write stored what it was given, not the reused memory.
  fgds::MutexLock lock(&state->mu);
  EXPECT_EQ(state->written, std::string(4096, 'w'));
}

}  // namespace
}  // namespace fgds::backend
