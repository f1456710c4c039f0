#include "fusefs/session/ring_worker_pool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "backend/local/nowait_reader.h"
#include "common/errno_status.h"
#include "common/log.h"
#include "fusefs/session/client_eventfd.h"
#include "fusefs/session/ring.h"

namespace fgds::session {
namespace {

// epoll data: the Ring's address, bit 0 set for its wake eventfd (Rings
// are aligned, so bit 0 of the address is free).
constexpr uint64_t kWakeBit = 1;
// The worker's own control eventfd.
constexpr uint64_t kControl = 0;
// How long a worker with nothing to serve keeps its io_uring
// registrations before dropping them (Worker::Run).
constexpr timespec kReleaseIdle = {0, 100 * 1000 * 1000};

unsigned DefaultWorkers() {
  cpu_set_t set;
  unsigned cpus = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    cpus = static_cast<unsigned>(CPU_COUNT(&set));
  }
  if (cpus == 0) cpus = std::max(1u, std::thread::hardware_concurrency());
  return std::min(cpus, kMaxDefaultRingWorkers);
}

// epoll_pwait2 (Linux 5.11) for its nanosecond timeout (batching
// deadlines are microseconds). Where the kernel, or valgrind (which does
// not know the call: tests/bench/usrbio_entry_cost.sh), refuses it with
// ENOSYS: epoll_pwait, the timeout rounded up to a millisecond (a deadline
// then fires late, never early).
int WaitForEvents(int epoll_fd, epoll_event* events, int max,
                  const timespec* timeout) {
  static std::atomic<bool> no_pwait2{false};
  if (!no_pwait2.load(std::memory_order_relaxed)) {
    const int n = epoll_pwait2(epoll_fd, events, max, timeout, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    no_pwait2.store(true, std::memory_order_relaxed);
  }
  int ms = -1;
  if (timeout != nullptr) {
    const uint64_t ns = static_cast<uint64_t>(timeout->tv_sec) * 1000000000u +
                        static_cast<uint64_t>(timeout->tv_nsec);
    ms =
        static_cast<int>(std::min<uint64_t>((ns + 999999) / 1000000, 1u << 30));
  }
  return epoll_pwait(epoll_fd, events, max, ms, nullptr);
}

}  // namespace

// One thread and its epoll set. Rings come and go through the command
// lists (Attach, Detach), applied by the thread between two waits.
class RingWorkerPool::Worker {
 public:
  Worker(int epoll_fd, int control_efd)
      : epoll_fd_(epoll_fd), control_efd_(control_efd) {}
  ~Worker() {
    close(epoll_fd_);
    close(control_efd_);
  }

  void Run();
  int Attach(std::shared_ptr<Ring> ring);
  void Detach(Ring* ring);
  void Stop();
  // Claims this worker for helping `ring` if it is idle; false otherwise.
  bool OfferHelp(std::weak_ptr<Ring>& ring);
  bool idle() const { return idle_.load(std::memory_order_acquire); }

  EventfdWriteWatch& watch() { return watch_; }
  size_t load() const { return load_.load(std::memory_order_relaxed); }
  std::thread thread;

 private:
  struct Entry {
    std::shared_ptr<Ring> ring;
    bool active = false;       // in active_: served on the next round
    uint64_t deadline_ns = 0;  // in timed_: served by then
  };

  // Applies Attach/Detach requests. REQUIRES: mu_.
  void ApplyCommandsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Activate(Entry* entry);
  // Serves every active ring once; rings that stay busy stay active. Then
  // one batch of each ring it helps.
  void ServeRound();
  // epoll timeout: none while a ring is active, else the nearest deadline.
  timespec* Timeout(timespec* ts) const;

  const int epoll_fd_;
  const int control_efd_;
  EventfdWriteWatch watch_;
  std::atomic<size_t> load_{0};
  // Asleep in its wait with nothing to serve: OfferHelp may claim it.
  std::atomic<bool> idle_{false};

  fgds::Mutex mu_;
  fgds::CondVar cv_;
  std::vector<std::shared_ptr<Ring>> to_attach_ ABSL_GUARDED_BY(mu_);
  std::vector<Ring*> to_detach_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::weak_ptr<Ring>> to_help_ ABSL_GUARDED_BY(mu_);

  // The thread's own.
  std::vector<std::weak_ptr<Ring>> helping_;
  absl::flat_hash_map<Ring*, std::unique_ptr<Entry>> rings_;
  std::vector<Entry*> active_;
  std::vector<Entry*> timed_;
  std::vector<Entry*> next_active_;
};

int RingWorkerPool::Worker::Attach(std::shared_ptr<Ring> ring) {
  fgds::MutexLock lock(&mu_);
  // Watched under mu_, with the ring queued in the same critical section:
  // the thread looks its events' rings up only after applying the
  // commands, so no event can name a ring it does not know yet.
  const uint64_t key = reinterpret_cast<uint64_t>(ring.get());
  epoll_event submit = {};
  submit.events = EPOLLIN | EPOLLET;
  submit.data.u64 = key;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ring->submit_efd(), &submit) != 0) {
    return -errno;
  }
  epoll_event wake = {};
  wake.events = EPOLLIN | EPOLLET;
  wake.data.u64 = key | kWakeBit;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, ring->wake_efd(), &wake) != 0) {
    const int err = errno;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, ring->submit_efd(), nullptr);
    return -err;
  }
  to_attach_.push_back(std::move(ring));
  load_.fetch_add(1, std::memory_order_relaxed);
  SignalOwnEventfd(control_efd_);
  return 0;
}

void RingWorkerPool::Worker::Detach(Ring* ring) {
  fgds::MutexLock lock(&mu_);
  to_detach_.push_back(ring);
  SignalOwnEventfd(control_efd_);
  // The thread may be inside the ring's Serve, blocked at worst on the
  // client's completion eventfd until the watchdog undoes that.
  while (std::find(to_detach_.begin(), to_detach_.end(), ring) !=
         to_detach_.end()) {
    cv_.Wait(&mu_);
  }
}

void RingWorkerPool::Worker::Stop() {
  {
    fgds::MutexLock lock(&mu_);
    stop_ = true;
  }
  SignalOwnEventfd(control_efd_);
  thread.join();
}

bool RingWorkerPool::Worker::OfferHelp(std::weak_ptr<Ring>& ring) {
  bool idle = true;
  if (!idle_.compare_exchange_strong(idle, false, std::memory_order_acq_rel)) {
    return false;
  }
  {
    fgds::MutexLock lock(&mu_);
    to_help_.push_back(std::move(ring));
  }
  SignalOwnEventfd(control_efd_);
  return true;
}

void RingWorkerPool::Worker::ApplyCommandsLocked() {
  for (std::weak_ptr<Ring>& ring : to_help_) {
    helping_.push_back(std::move(ring));
  }
  to_help_.clear();
  for (std::shared_ptr<Ring>& ring : to_attach_) {
    Ring* key = ring.get();
    auto entry = std::make_unique<Entry>();
    entry->ring = std::move(ring);
    Entry* raw = entry.get();
    rings_[key] = std::move(entry);
    // Served once at once: entries may have been queued before the ring
    // was watched, and its NEED_WAKEUP is not up yet.
    Activate(raw);
  }
  to_attach_.clear();
  if (to_detach_.empty()) return;
  for (Ring* ring : to_detach_) {
    auto it = rings_.find(ring);
    if (it == rings_.end()) continue;
    Entry* entry = it->second.get();
    active_.erase(std::remove(active_.begin(), active_.end(), entry),
                  active_.end());
    timed_.erase(std::remove(timed_.begin(), timed_.end(), entry),
                 timed_.end());
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, ring->submit_efd(), nullptr);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, ring->wake_efd(), nullptr);
    rings_.erase(it);
    load_.fetch_sub(1, std::memory_order_relaxed);
  }
  to_detach_.clear();
  cv_.SignalAll();
}

void RingWorkerPool::Worker::Activate(Entry* entry) {
  if (entry->deadline_ns != 0) {
    entry->deadline_ns = 0;
    timed_.erase(std::remove(timed_.begin(), timed_.end(), entry),
                 timed_.end());
  }
  if (!entry->active) {
    entry->active = true;
    active_.push_back(entry);
  }
}

timespec* RingWorkerPool::Worker::Timeout(timespec* ts) const {
  if (!active_.empty() || !helping_.empty()) {
    *ts = {0, 0};
    return ts;
  }
  uint64_t nearest = 0;
  for (const Entry* entry : timed_) {
    if (nearest == 0 || entry->deadline_ns < nearest) {
      nearest = entry->deadline_ns;
    }
  }
  if (nearest == 0) return nullptr;
  const uint64_t now = MonotonicNs();
  const uint64_t left = nearest > now ? nearest - now : 0;
  *ts = {static_cast<time_t>(left / 1000000000u),
         static_cast<long>(left % 1000000000u)};
  return ts;
}

void RingWorkerPool::Worker::ServeRound() {
  const uint64_t now = MonotonicNs();
  for (size_t i = 0; i < timed_.size();) {
    Entry* entry = timed_[i];
    if (entry->deadline_ns <= now) {
      entry->deadline_ns = 0;
      timed_[i] = timed_.back();
      timed_.pop_back();
      if (!entry->active) {
        entry->active = true;
        active_.push_back(entry);
      }
    } else {
      ++i;
    }
  }
  next_active_.clear();
  for (Entry* entry : active_) {
    Ring::Turn turn;
    try {
      turn = entry->ring->Serve(&watch_, now);
    } catch (const std::bad_alloc&) {
      // Serve fails its own entries with ENOMEM where it can; whatever
      // escaped leaves this ring asleep until its next kick, and every
      // other ring served.
      LogWarning(
          "usrbio ring: out of memory serving it; retrying on its "
          "next kick");
      turn = {Ring::Turn::kAsleep, 0};
    }
    switch (turn.state) {
      case Ring::Turn::kAgain:
        next_active_.push_back(entry);
        break;
      case Ring::Turn::kAsleep:
        entry->active = false;
        break;
      case Ring::Turn::kUntil:
        entry->active = false;
        entry->deadline_ns = turn.deadline_ns;
        timed_.push_back(entry);
        break;
    }
  }
  active_.swap(next_active_);
  for (size_t i = 0; i < helping_.size();) {
    std::shared_ptr<Ring> ring = helping_[i].lock();
    bool more = false;
    if (ring != nullptr) {
      try {
        more = ring->Help(&watch_);
      } catch (const std::bad_alloc&) {
        more = false;  // the owner serves it alone
      }
    }
    if (more) {
      ++i;
      continue;
    }
    if (ring != nullptr) ring->HelpDone();
    helping_[i] = std::move(helping_.back());
    helping_.pop_back();
  }
}

void RingWorkerPool::Worker::Run() {
  // Named so that CPU use can be told apart per thread kind
  // (/proc/<pid>/task/*/comm: `fgds bench` reports the daemon's CPU so).
  pthread_setname_np(pthread_self(), "fgds-ring");
  // A file whose last reference this thread would drop (its io_uring's
  // fixed table, a batch's completion) is closed on the release thread
  // instead (backend/registration_key.h).
  backend::MarkTableThread();
  epoll_event events[64];
  for (;;) {
    timespec ts;
    timespec* timeout = Timeout(&ts);
    // Idle only while it would sleep with nothing to serve: a claim
    // (OfferHelp) clears the flag and wakes it.
    if (timeout == nullptr) idle_.store(true, std::memory_order_release);
    // Files and buffers this thread's io_uring holds registered
    // (backend/local/nowait_reader.h) keep open files and pinned pages
    // alive: a worker with nothing to serve keeps them for kReleaseIdle
    // (a client pausing briefly finds them still there), then drops them
    // and sleeps for good. One wakeup per idle period: a sleeping client
    // still costs nothing.
    const bool release_if_quiet =
        timeout == nullptr && backend::NowaitHoldsRegistrations();
    if (release_if_quiet) {
      ts = kReleaseIdle;
      timeout = &ts;
    }
    int n = WaitForEvents(epoll_fd_, events, 64, timeout);
    idle_.store(false, std::memory_order_relaxed);
    if (release_if_quiet && n == 0) backend::ReleaseNowaitRegistrations();
    if (n < 0) {
      if (errno != EINTR) {
        LogWarning("usrbio ring worker: epoll wait: %s", strerror(errno));
      }
      n = 0;
    }
    // The control eventfd is drained before the commands are applied: a
    // command queued in between then leaves it readable for the next wait
    // (drained after, its signal could be lost with the command pending).
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kControl) ReadEventfdNoWait(control_efd_);
    }
    {
      fgds::MutexLock lock(&mu_);
      ApplyCommandsLocked();
      if (stop_) return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t key = events[i].data.u64;
      if (key == kControl) continue;
      auto it = rings_.find(reinterpret_cast<Ring*>(key & ~kWakeBit));
      // A ring detached after this wait returned: its event is stale.
      if (it == rings_.end()) continue;
      if (key & kWakeBit) ReadEventfdNoWait(it->second->ring->wake_efd());
      Activate(it->second.get());
    }
    ServeRound();
  }
}

absl::StatusOr<std::unique_ptr<RingWorkerPool>> RingWorkerPool::Start(
    const RingWorkerPoolOptions& options) {
  std::unique_ptr<RingWorkerPool> pool(new RingWorkerPool(options));
  const unsigned count =
      options.workers != 0 ? options.workers : DefaultWorkers();
  for (unsigned i = 0; i < count; ++i) {
    int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0) return PosixError("epoll_create1", errno);
    int control_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (control_efd < 0) {
      const int err = errno;
      close(epoll_fd);
      return PosixError("eventfd", err);
    }
    auto worker = std::make_unique<Worker>(epoll_fd, control_efd);
    epoll_event control = {};
    control.events = EPOLLIN;
    control.data.u64 = kControl;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, control_efd, &control) != 0) {
      return PosixError("epoll_ctl", errno);
    }
    try {
      worker->thread = std::thread(&Worker::Run, worker.get());
    } catch (const std::system_error& e) {
      // The workers started so far are stopped by ~RingWorkerPool.
      return PosixError("start a ring worker thread", e.code().value());
    }
    pool->workers_.push_back(std::move(worker));
  }
  try {
    pool->watchdog_ = std::thread(&RingWorkerPool::WatchdogLoop, pool.get());
  } catch (const std::system_error& e) {
    return PosixError("start the ring watchdog thread", e.code().value());
  }
  return pool;
}

RingWorkerPool::RingWorkerPool(const RingWorkerPoolOptions& options)
    : options_(options) {}

RingWorkerPool::~RingWorkerPool() {
  {
    fgds::MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (watchdog_.joinable()) watchdog_.join();
  for (auto& worker : workers_) worker->Stop();
}

int RingWorkerPool::Attach(std::shared_ptr<Ring> ring) {
  Worker* least = workers_[0].get();
  for (auto& worker : workers_) {
    if (worker->load() < least->load()) least = worker.get();
  }
  Ring* key = ring.get();
  int ret = least->Attach(std::move(ring));
  if (ret == 0) {
    fgds::MutexLock lock(&mu_);
    attached_[key] = least;
    if (attached_.size() == 1) cv_.SignalAll();  // the watchdog ticks
  }
  return ret;
}

void RingWorkerPool::Detach(Ring* ring) {
  Worker* worker = nullptr;
  {
    fgds::MutexLock lock(&mu_);
    auto it = attached_.find(ring);
    if (it == attached_.end()) return;
    worker = it->second;
  }
  // Outside mu_: the watchdog needs it to undo a write this may wait for.
  worker->Detach(ring);
  fgds::MutexLock lock(&mu_);
  attached_.erase(ring);
}

size_t RingWorkerPool::IdleWorkers() const {
  size_t idle = 0;
  for (const auto& worker : workers_) idle += worker->idle() ? 1 : 0;
  return idle;
}

bool RingWorkerPool::WantHelp(std::weak_ptr<Ring> ring) {
  const size_t count = workers_.size();
  const size_t start = next_helper_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < count; ++i) {
    if (workers_[(start + i) % count]->OfferHelp(ring)) return true;
  }
  return false;
}

void RingWorkerPool::WatchdogLoop() {
  pthread_setname_np(pthread_self(), "fgds-ring-wd");
  const uint64_t bound_ns = uint64_t{options_.stall_ms} * 1000000;
  const absl::Duration tick =
      absl::Milliseconds(std::max<uint32_t>(options_.stall_ms / 2, 1));
  fgds::MutexLock lock(&mu_);
  while (!stop_) {
    // No ring, no client eventfd to write: sleep until one comes.
    if (attached_.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    cv_.WaitWithTimeout(&mu_, tick);
    const uint64_t now = MonotonicNs();
    for (auto& worker : workers_)
      worker->watch().RescueIfStalled(now, bound_ns);
  }
}

}  // namespace fgds::session
