#include "common/io/uring_worker.h"

#include <poll.h>
#include <pthread.h>
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
// Submissions interrupted by a signal are retried this often, then the
// entries count as refused.
constexpr int kSubmitAttempts = 4;
// While waiting through io_uring fails, poll(2) watches the ring's fd and
// the eventfd instead; this bounds a wakeup it might miss.
constexpr int kFallbackPollMs = 50;

// Refusals that the kernel's own completions can cure (it lacked memory or
// completion-queue room), or a signal.
bool Transient(int error) {
  return error == -EAGAIN || error == -EBUSY || error == -EINTR;
}

}  // namespace

void UringItemList::PushBack(IoCompletion* item) {
  item->next_ = nullptr;
  if (tail_ == nullptr) {
    head_ = item;
  } else {
    tail_->next_ = item;
  }
  tail_ = item;
}

void UringItemList::PushFront(IoCompletion* item) {
  item->next_ = head_;
  head_ = item;
  if (tail_ == nullptr) tail_ = item;
}

IoCompletion* UringItemList::PopFront() {
  IoCompletion* item = head_;
  if (item == nullptr) return nullptr;
  head_ = item->next_;
  if (head_ == nullptr) tail_ = nullptr;
  item->next_ = nullptr;
  return item;
}

void UringItemList::Splice(UringItemList* other) {
  if (other->head_ == nullptr) return;
  if (tail_ == nullptr) {
    head_ = other->head_;
  } else {
    tail_->next_ = other->head_;
  }
  tail_ = other->tail_;
  other->head_ = other->tail_ = nullptr;
}

absl::StatusOr<std::unique_ptr<UringWorker>> UringWorker::Create(
    unsigned depth, uint64_t spin_ns, UringOs* os) {
  std::unique_ptr<UringWorker> worker(new UringWorker());
  worker->os_ = os != nullptr ? os : UringOs::Default();
  worker->spin_ns_ = spin_ns;
  worker->depth_ = std::max(depth, 2u);
  io_uring_params params = {};
  int ret = worker->os_->QueueInit(worker->depth_, &worker->uring_, &params);
  if (ret < 0) return PosixError("io_uring_queue_init", -ret);
  worker->ring_initialized_ = true;
  // One slot stays free for re-arming the wake poll.
  worker->depth_ = std::min(worker->depth_, params.sq_entries) - 1;
  const int efd = worker->os_->EventFd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return PosixError("eventfd", -efd);  // the ring goes with it
  worker->wake_efd_ = efd;
  worker->thread_ = std::thread(&UringWorker::Loop, worker.get());
  return worker;
}

UringWorker::~UringWorker() {
  if (thread_.joinable()) {  // else Create failed before starting it
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
  }
  if (ring_initialized_) os_->QueueExit(&uring_);
  if (wake_efd_ >= 0) close(wake_efd_);
}

void UringWorker::Enqueue(std::span<IoCompletion* const> items) {
  if (items.empty()) return;
  bool wake;
  {
    MutexLock lock(&mu_);
    for (IoCompletion* item : items) queue_.PushBack(item);
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
  // Items never take the last slot (Create), and entries the kernel refuses
  // are taken back out (Withdraw), so the slot is there.
  io_uring_sqe* sqe = io_uring_get_sqe(&uring_);
  if (sqe == nullptr) return;  // not armed: Sleep then polls the eventfd
  io_uring_prep_poll_add(sqe, wake_efd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kWakeTag);
  wake_armed_ = true;
}

bool UringWorker::TakeQueued() {
  MutexLock lock(&mu_);
  backlog_.Splice(&queue_);
  has_work_.store(false, std::memory_order_relaxed);
  may_sleep_ = false;
  return !(stopping_ && backlog_.empty() && inflight_ == 0);
}

void UringWorker::Finish(IoCompletion* item, int64_t result) {
  item->result_ = result;
  finished_.PushBack(item);
}

void UringWorker::PrepItem(io_uring_sqe* sqe, IoCompletion* item) {
  const IoCompletion::Transfer& t = item->transfer_;
  const size_t len = std::min(t.len - t.done, kMaxTransfer);
  char* buf = t.buf + t.done;
  const uint64_t offset = t.offset + t.done;
  if (IsSync(t.op)) {
    io_uring_prep_fsync(sqe, t.fd,
                        t.op == IoOp::kFdatasync ? IORING_FSYNC_DATASYNC : 0);
  } else if (t.len == 0) {
    // Nothing to move, but the completion still comes from the ring, so
    // every item finishes the same way.
    io_uring_prep_nop(sqe);
  } else if (t.op == IoOp::kRead) {
    io_uring_prep_read(sqe, t.fd, buf, static_cast<unsigned>(len), offset);
  } else {
    io_uring_prep_write(sqe, t.fd, buf, static_cast<unsigned>(len), offset);
  }
  io_uring_sqe_set_data(sqe, item);
}

void UringWorker::PrepBacklog() {
  while (!backlog_.empty() && inflight_ < depth_) {
    io_uring_sqe* sqe = io_uring_get_sqe(&uring_);
    if (sqe == nullptr) break;
    PrepItem(sqe, backlog_.PopFront());
    ++inflight_;
  }
}

unsigned UringWorker::Unconsumed() const {
  // Prepared (sqe_tail) minus taken by the kernel (its head).
  return io_uring_sq_ready(&uring_);
}

unsigned UringWorker::UnconsumedItems() const {
  // Acquire: the kernel is done reading the entries before its head.
  const unsigned head = io_uring_smp_load_acquire(uring_.sq.khead);
  unsigned items = 0;
  for (unsigned pos = head; pos != uring_.sq.sqe_tail; ++pos) {
    if (uring_.sq.sqes[pos & uring_.sq.ring_mask].user_data != kWakeTag) {
      ++items;
    }
  }
  return items;
}

int UringWorker::SubmitPrepared() {
  int ret = 0;
  for (int attempt = 0; attempt < kSubmitAttempts; ++attempt) {
    ret = os_->Submit(&uring_);
    if (Unconsumed() == 0) {
      unconsumed_items_ = 0;
      return 0;
    }
    if (ret != -EINTR) break;
  }
  unconsumed_items_ = UnconsumedItems();
  // The kernel took some (a count), not all: as if refused for now.
  return ret < 0 ? ret : -EAGAIN;
}

int64_t UringWorker::ResultOf(const IoCompletion& item, int res) {
  // An error after progress reports the progress, as pread does.
  const size_t done = item.transfer_.done;
  return res < 0 && done == 0 ? static_cast<int64_t>(res)
                              : static_cast<int64_t>(done);
}

void UringWorker::Withdraw(int error) {
  io_uring_sq& sq = uring_.sq;
  const unsigned head = io_uring_smp_load_acquire(sq.khead);
  for (unsigned pos = head; pos != sq.sqe_tail; ++pos) {
    const uint64_t tag = sq.sqes[pos & sq.ring_mask].user_data;
    if (tag == kWakeTag) {
      wake_armed_ = false;
      continue;
    }
    auto* item = reinterpret_cast<IoCompletion*>(tag);
    --inflight_;
    Finish(item, ResultOf(*item, error));
  }
  // Un-queue them by moving the tail back to the kernel's head. Without
  // SQPOLL the kernel reads the tail only inside io_uring_enter, which only
  // this thread calls, so it never sees them. Release pairs with the
  // kernel's acquire of the tail on the next submission.
  sq.sqe_head = head;
  sq.sqe_tail = head;
  io_uring_smp_store_release(sq.ktail, head);
  unconsumed_items_ = 0;
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

void UringWorker::Sleep() {
  {
    MutexLock lock(&mu_);
    // Stopping with nothing in flight: go round to exit.
    if (!queue_.empty() || (stopping_ && inflight_ == 0)) return;
    may_sleep_ = true;
  }
  // What can wake the ring: an item the kernel holds completing, or the
  // wake poll, once the kernel has taken it.
  const bool kernel_items = inflight_ > unconsumed_items_;
  const bool wake_in_kernel = wake_armed_ && Unconsumed() == 0;
  if (kernel_items || wake_in_kernel) {
    io_uring_cqe* cqe;
    const int ret = os_->WaitCqe(&uring_, &cqe);
    if (ret == 0 || Transient(ret) || ret == -ETIME) return;
  }
  // The ring cannot wake us, or waiting through it failed: poll(2) its fd
  // (readable once completions are posted) and the eventfd, which Enqueue
  // and the destructor write while may_sleep_ is set.
  pollfd fds[2] = {{wake_efd_, POLLIN, 0}, {uring_.ring_fd, POLLIN, 0}};
  const bool ring = kernel_items || wake_in_kernel;
  if (poll(fds, ring ? 2 : 1, ring ? kFallbackPollMs : -1) > 0 &&
      (fds[0].revents & POLLIN) != 0) {
    uint64_t value;
    (void)!read(wake_efd_, &value, sizeof(value));
  }
}

void UringWorker::Reap() {
  unsigned head;
  unsigned count = 0;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(&uring_, head, cqe) {
    ++count;
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    if (tag == kWakeTag) {
      uint64_t value;
      (void)!read(wake_efd_, &value, sizeof(value));
      wake_armed_ = false;  // re-armed on the next turn
      continue;
    }
    auto* item = reinterpret_cast<IoCompletion*>(tag);
    --inflight_;
    const int res = cqe->res;
    if (res == -EAGAIN || res == -EINTR) {
      backlog_.PushFront(item);
      continue;
    }
    if (res > 0) {
      IoCompletion::Transfer& t = item->transfer_;
      t.done += static_cast<size_t>(res);
      if (t.done < t.len) {
        backlog_.PushFront(item);  // the rest of a short transfer
        continue;
      }
    }
    // Whole length, end of file (0) or an error.
    Finish(item, ResultOf(*item, res));
  }
  io_uring_cq_advance(&uring_, count);
}

void UringWorker::Loop() {
  // Named so that CPU use can be told apart per thread kind
  // (/proc/<pid>/task/*/comm).
  pthread_setname_np(pthread_self(), "fgds-io");
  while (TakeQueued()) {
    if (!wake_armed_) ArmWake();
    PrepBacklog();
    if (const int error = SubmitPrepared(); error != 0) {
      // A transient refusal while the kernel holds items: their completions
      // give back what it lacked, and the entries go in on the next turn.
      // Otherwise nothing would ever let them in: they fail now.
      if (!Transient(error) || inflight_ == unconsumed_items_) {
        Withdraw(error);
      }
    }
    if (finished_.empty() && io_uring_cq_ready(&uring_) == 0 && !Spin()) {
      Sleep();
    }
    Reap();
    // Unlinked before Complete, which may delete or resubmit the item.
    while (IoCompletion* item = finished_.PopFront()) {
      item->Complete(item->result_);
    }
  }
}

}  // namespace fgds::io
