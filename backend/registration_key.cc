#include "backend/registration_key.h"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <exception>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace fgds::backend {

// The key's share (1 while the key lives) plus one per table holding it;
// the descriptor the owner handed over is closed when the count reaches 0.
class RegistrationHold {
 public:
  std::atomic<uint32_t> shares{1};
  std::atomic<int> fd{-1};
};

namespace {

std::atomic<uint64_t> g_next_key{1};

// The last kRetiredLogSize retired keys; entry i % size is the i-th.
struct RetiredLog {
  fgds::Mutex mu;
  std::array<uint64_t, kRetiredLogSize> keys ABSL_GUARDED_BY(mu) = {};
  // Written under mu; read without it as the cheap "anything new?" check.
  std::atomic<uint64_t> count{0};
};

RetiredLog& Log() {
  // Never destroyed: keys of static objects may die after it would.
  static RetiredLog* log = new RetiredLog;
  return *log;
}

thread_local bool tl_table_thread = false;

// The release thread and its queue. Started at the first descriptor a
// table's thread hands over; never stopped (the process's exit ends it).
struct Releaser {
  fgds::Mutex mu;
  fgds::CondVar cv;
  std::vector<int> fds ABSL_GUARDED_BY(mu);
  bool started ABSL_GUARDED_BY(mu) = false;
  std::atomic<uint64_t> here{0};
  std::atomic<uint64_t> released{0};
  std::atomic<pid_t> tid{0};

  void Run() {
    pthread_setname_np(pthread_self(), "fgds-release");
    tid.store(gettid(), std::memory_order_release);
    std::vector<int> batch;
    for (;;) {
      {
        fgds::MutexLock lock(&mu);
        while (fds.empty()) cv.Wait(&mu);
        batch.swap(fds);
      }
      for (int fd : batch) {
        close(fd);
        released.fetch_add(1, std::memory_order_relaxed);
      }
      batch.clear();
    }
  }

  // False: no thread, or no room in the queue; the caller closes.
  bool Take(int fd) {
    fgds::MutexLock lock(&mu);
    try {
      if (!started) {
        std::thread(&Releaser::Run, this).detach();
        started = true;
      }
      fds.push_back(fd);
    } catch (const std::exception&) {  // system_error, bad_alloc
      return false;
    }
    cv.Signal();
    return true;
  }
};

Releaser& TheReleaser() {
  // Never destroyed: its thread outlives every static.
  static Releaser* releaser = new Releaser;
  return *releaser;
}

void Unshare(RegistrationHold* hold) {
  // acq_rel: every sharer's kernel release happens before the close.
  if (hold->shares.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const int fd = hold->fd.load(std::memory_order_relaxed);
  delete hold;
  if (fd >= 0) CloseOffTableThreads(fd);
}

}  // namespace

RegistrationKey::RegistrationKey()
    : value_(g_next_key.fetch_add(1, std::memory_order_relaxed)) {}

RegistrationKey::~RegistrationKey() {
  if (registered_.load(std::memory_order_seq_cst)) {
    RetiredLog& log = Log();
    fgds::MutexLock lock(&log.mu);
    const uint64_t n = log.count.load(std::memory_order_relaxed);
    log.keys[n % kRetiredLogSize] = value_;
    log.count.store(n + 1, std::memory_order_release);
  }
  // After the log entry: tables that hold the key drop it at their next
  // batch, and the last of them (or this, if none is left) closes.
  if (RegistrationHold* hold = hold_.load(std::memory_order_acquire)) {
    Unshare(hold);
  }
}

RegistrationHold* RegistrationKey::Hold() const {
  RegistrationHold* hold = hold_.load(std::memory_order_acquire);
  if (hold == nullptr) {
    RegistrationHold* fresh = new (std::nothrow) RegistrationHold;
    if (fresh == nullptr) return nullptr;
    if (hold_.compare_exchange_strong(hold, fresh, std::memory_order_acq_rel)) {
      hold = fresh;
    } else {
      delete fresh;  // another table's thread made it first
    }
  }
  MarkRegistered();
  hold->shares.fetch_add(1, std::memory_order_relaxed);
  return hold;
}

void RegistrationKey::CloseWhenUnregistered(int fd) const {
  RegistrationHold* hold = hold_.load(std::memory_order_acquire);
  if (hold == nullptr) {
    // No table ever held it, and none can from here on (the object is
    // going: no read names it any more).
    CloseOffTableThreads(fd);
    return;
  }
  // Read by whoever drops the last share, after the key's own (in
  // ~RegistrationKey, after this) is gone.
  hold->fd.store(fd, std::memory_order_relaxed);
}

void ReleaseHold(RegistrationHold* hold) { Unshare(hold); }

void MarkTableThread() { tl_table_thread = true; }

void CloseOffTableThreads(int fd) {
  Releaser& releaser = TheReleaser();
  if (tl_table_thread && releaser.Take(fd)) return;
  close(fd);
  releaser.here.fetch_add(1, std::memory_order_relaxed);
}

RegistrationCloses RegistrationClosesSoFar() {
  Releaser& releaser = TheReleaser();
  return {releaser.here.load(std::memory_order_relaxed),
          releaser.released.load(std::memory_order_relaxed),
          releaser.tid.load(std::memory_order_acquire)};
}

uint64_t RetiredCount() { return Log().count.load(std::memory_order_acquire); }

bool RetiredSince(uint64_t from, uint64_t* to, std::span<uint64_t> keys,
                  size_t* count) {
  RetiredLog& log = Log();
  fgds::MutexLock lock(&log.mu);
  const uint64_t n = log.count.load(std::memory_order_relaxed);
  *to = n;
  *count = 0;
  if (n - from > kRetiredLogSize || n - from > keys.size()) return false;
  for (uint64_t i = from; i < n; ++i) {
    keys[(*count)++] = log.keys[i % kRetiredLogSize];
  }
  return true;
}

}  // namespace fgds::backend
