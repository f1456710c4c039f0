#include "common/io/uring_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#include "common/errno_status.h"

namespace fgds::io {
namespace {

// io_uring lengths are 32-bit; longer items go in pieces of this size
// through the short-transfer path.
constexpr size_t kMaxTransfer = size_t{1} << 30;
// user_data of the eventfd poll that wakes the worker (items are pointers,
// never 0).
constexpr uint64_t kWakeTag = 0;

}  // namespace

absl::StatusOr<std::unique_ptr<UringWorker>> UringWorker::Create(
    unsigned depth, uint64_t spin_ns) {
  std::unique_ptr<UringWorker> worker(new UringWorker());
  worker->spin_ns_ = spin_ns;
  worker->depth_ = std::max(depth, 2u);
  io_uring_params params = {};
  int ret =
      io_uring_queue_init_params(worker->depth_, &worker->uring_, &params);
  if (ret < 0) return PosixError("io_uring_queue_init", -ret);
  // One slot stays free for re-arming the wake poll.
  worker->depth_ = std::min(worker->depth_, params.sq_entries) - 1;
  worker->wake_efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (worker->wake_efd_ < 0) {
    int err = errno;
    io_uring_queue_exit(&worker->uring_);
    return PosixError("eventfd", err);
  }
  worker->thread_ = std::thread(&UringWorker::Loop, worker.get());
  return worker;
}

UringWorker::~UringWorker() {
  bool wake;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    wake = may_sleep_;
  }
  if (wake) {
    uint64_t one = 1;
    (void)!write(wake_efd_, &one, sizeof(one));
  }
  thread_.join();
  io_uring_queue_exit(&uring_);
  close(wake_efd_);
}

void UringWorker::Enqueue(std::span<WorkItem* const> items) {
  if (items.empty()) return;
  bool wake;
  {
    MutexLock lock(&mu_);
    queue_.insert(queue_.end(), items.begin(), items.end());
    has_work_.store(true, std::memory_order_relaxed);
    wake = may_sleep_;
    may_sleep_ = false;
  }
  if (wake) {
    uint64_t one = 1;
    // EAGAIN: the counter is already nonzero, the worker wakes anyway.
    (void)!write(wake_efd_, &one, sizeof(one));
  }
}

void UringWorker::ArmWake() {
  // Items never take the last slot (Create), so room appears once the
  // kernel has taken what is queued.
  io_uring_sqe* sqe;
  while ((sqe = io_uring_get_sqe(&uring_)) == nullptr) io_uring_submit(&uring_);
  io_uring_prep_poll_add(sqe, wake_efd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

bool UringWorker::TakeQueued() {
  {
    MutexLock lock(&mu_);
    taken_.swap(queue_);
    has_work_.store(false, std::memory_order_relaxed);
    may_sleep_ = false;
    if (stopping_ && taken_.empty() && backlog_.empty() && inflight_ == 0) {
      return false;
    }
  }
  backlog_.insert(backlog_.end(), taken_.begin(), taken_.end());
  taken_.clear();
  return true;
}

void UringWorker::PrepItem(io_uring_sqe* sqe, WorkItem* item) {
  const size_t len = std::min(item->len_ - item->done_, kMaxTransfer);
  char* buf = item->buf_ + item->done_;
  const uint64_t offset = item->offset_ + item->done_;
  if (IsSync(item->op_)) {
    io_uring_prep_fsync(
        sqe, item->fd_,
        item->op_ == IoOp::kFdatasync ? IORING_FSYNC_DATASYNC : 0);
  } else if (item->len_ == 0) {
    // Nothing to move, but the completion still comes from the ring, so
    // every item finishes the same way.
    io_uring_prep_nop(sqe);
  } else if (item->op_ == IoOp::kRead) {
    io_uring_prep_read(sqe, item->fd_, buf, static_cast<unsigned>(len), offset);
  } else {
    io_uring_prep_write(sqe, item->fd_, buf, static_cast<unsigned>(len),
                        offset);
  }
  io_uring_sqe_set_data(sqe, item);
}

void UringWorker::PrepBacklog() {
  while (!backlog_.empty() && inflight_ < depth_) {
    io_uring_sqe* sqe = io_uring_get_sqe(&uring_);
    if (sqe == nullptr) break;
    PrepItem(sqe, backlog_.front());
    backlog_.pop_front();
    ++inflight_;
  }
}

bool UringWorker::Spin() {
  if (spin_ns_ == 0) return false;
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns_);
  do {
    // Plain loads: new work is taken under the lock right after.
    if (has_work_.load(std::memory_order_relaxed) ||
        io_uring_cq_ready(&uring_) > 0) {
      return true;
    }
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

void UringWorker::Loop() {
  ArmWake();
  std::vector<std::pair<WorkItem*, int64_t>> finished;
  bool ring_broken = false;
  while (TakeQueued()) {
    PrepBacklog();
    int ret = io_uring_submit(&uring_);
    unsigned ready = io_uring_cq_ready(&uring_);
    if (ready == 0 && ret >= 0 && Spin()) continue;
    if (ready == 0 && ret >= 0) {
      // Nothing finished inline: sleep, unless work arrived meanwhile.
      {
        MutexLock lock(&mu_);
        // Stopping with nothing in flight: go round to exit.
        if (!queue_.empty() || (stopping_ && inflight_ == 0)) continue;
        may_sleep_ = true;
      }
      io_uring_cqe* cqe;
      ret = io_uring_wait_cqe(&uring_, &cqe);
    }
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      ring_broken = true;  // nothing more can complete through this ring
      break;
    }
    bool rearm = false;
    unsigned head;
    unsigned count = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&uring_, head, cqe) {
      ++count;
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      if (tag == kWakeTag) {
        uint64_t value;
        (void)!read(wake_efd_, &value, sizeof(value));
        rearm = true;
        continue;
      }
      auto* item = reinterpret_cast<WorkItem*>(tag);
      --inflight_;
      const int res = cqe->res;
      if (res == -EAGAIN || res == -EINTR) {
        backlog_.push_front(item);
        continue;
      }
      if (res > 0) {
        item->done_ += static_cast<size_t>(res);
        if (item->done_ < item->len_) {
          backlog_.push_front(item);  // the rest of a short transfer
          continue;
        }
      }
      // Whole length, end of file (0) or an error; an error after progress
      // reports the progress, as pread does.
      finished.emplace_back(item, res < 0 && item->done_ == 0
                                      ? static_cast<int64_t>(res)
                                      : static_cast<int64_t>(item->done_));
    }
    io_uring_cq_advance(&uring_, count);
    if (rearm) ArmWake();
    for (auto [item, result] : finished) item->Finish(result);
    finished.clear();
  }
  if (ring_broken) FailForever();
}

void UringWorker::FailForever() {
  // Only a kernel bug breaks a ring. What the kernel holds never completes;
  // everything else fails at once, so no caller waits forever.
  for (WorkItem* item : backlog_) item->Finish(-EIO);
  backlog_.clear();
  for (;;) {
    {
      MutexLock lock(&mu_);
      taken_.swap(queue_);
      if (taken_.empty()) {
        if (stopping_) return;
        may_sleep_ = true;
      }
    }
    if (taken_.empty()) {
      pollfd pfd = {wake_efd_, POLLIN, 0};
      (void)!poll(&pfd, 1, -1);
      uint64_t value;
      (void)!read(wake_efd_, &value, sizeof(value));
      continue;
    }
    for (WorkItem* item : taken_) item->Finish(-EIO);
    taken_.clear();
  }
}

}  // namespace fgds::io
