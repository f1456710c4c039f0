#include "backend/local/nowait_reader.h"

#include <liburing.h>
#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>

namespace fgds::backend {
namespace {

// Submission queue entries: reads per io_uring_enter. A ring worker's turn
// takes at most --usrbio-max-batch (16 by default) entries; larger batches
// go in several calls.
constexpr unsigned kDepth = 64;

// The calling thread's ring. Closed at the thread's exit: every read it
// took completed inside the call that submitted it, so nothing is in
// flight then.
class ThreadRing {
 public:
  ~ThreadRing() {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  // Sets the ring up at the first use; false: use preadv2.
  bool Usable() {
    if (!ready_ && !failed_) Setup();
    return ready_;
  }
  // Submits reads[0..n) (n <= kDepth) and reaps their completions. Returns
  // how many were submitted (their results set); the rest are the caller's
  // (the ring is then given up: see Abandon).
  size_t Read(NowaitRead* reads, size_t n);
  void ForceFallback() {
    Abandon();
    failed_ = true;
  }
  bool ready() const { return ready_; }

 private:
  void Setup() {
    io_uring_params params = {};
    // Single issuer and deferred task work: the ring is this thread's
    // alone, and completions that need task work run when it reaps them.
    // SUBMIT_ALL: one bad entry (a closed descriptor) fails alone instead
    // of stopping the submission of those after it.
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
                   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(kDepth, &ring_, &params) == 0) {
      ready_ = true;
      return;
    }
    params = {};
    params.flags = IORING_SETUP_SUBMIT_ALL;
    if (io_uring_queue_init_params(kDepth, &ring_, &params) == 0) {
      ready_ = true;
      return;
    }
    failed_ = true;
  }
  // Gives the ring up: entries the kernel did not take stay unread in its
  // submission queue and go with it.
  void Abandon() {
    if (ready_) io_uring_queue_exit(&ring_);
    ready_ = false;
    failed_ = true;
  }

  io_uring ring_ = {};
  bool ready_ = false;
  bool failed_ = false;
};

size_t ThreadRing::Read(NowaitRead* reads, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    // Never null: every earlier batch was reaped whole and n <= kDepth.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, reads[i].fd, reads[i].buf, reads[i].len,
                       reads[i].offset);
    sqe->rw_flags = RWF_NOWAIT;
    io_uring_sqe_set_data64(sqe, i);
  }
  int ret = io_uring_submit(&ring_);
  while (ret == -EINTR) ret = io_uring_submit(&ring_);
  const size_t submitted = ret > 0 ? static_cast<size_t>(ret) : 0;
  // RWF_NOWAIT reads complete inside the submission, so this finds their
  // completions at once; the wait is for the rare one that ends through
  // task work, which the reaping call runs.
  for (size_t got = 0; got < submitted;) {
    io_uring_cqe* cqe = nullptr;
    const int err = io_uring_wait_cqe(&ring_, &cqe);
    if (err != 0) {
      if (err != -EINTR && err != -EAGAIN && err != -ETIME) {
        // The kernel owns the buffers until each read completes: wait for
        // the ring to say so rather than give them back early.
        pollfd pfd = {ring_.ring_fd, POLLIN, 0};
        poll(&pfd, 1, 1);
      }
      continue;
    }
    const uint64_t index = io_uring_cqe_get_data64(cqe);
    if (index < n) reads[index].result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    ++got;
  }
  if (submitted < n) Abandon();
  return submitted;
}

thread_local ThreadRing tl_ring;
std::atomic<bool> g_use_uring{true};

int64_t PreadNowait(const NowaitRead& read) {
  iovec iov = {read.buf, read.len};
  const ssize_t n =
      preadv2(read.fd, &iov, 1, static_cast<off_t>(read.offset), RWF_NOWAIT);
  return n >= 0 ? n : -errno;
}

}  // namespace

void ReadNowait(std::span<NowaitRead> reads) {
  size_t done = 0;
  const bool uring = g_use_uring.load(std::memory_order_relaxed);
  while (uring && done < reads.size() && tl_ring.Usable()) {
    const size_t n = std::min<size_t>(reads.size() - done, kDepth);
    done += tl_ring.Read(reads.data() + done, n);
  }
  for (; done < reads.size(); ++done) {
    reads[done].result = PreadNowait(reads[done]);
  }
}

void SetNowaitUring(bool use) {
  g_use_uring.store(use, std::memory_order_relaxed);
}

bool NowaitUsesUring() { return tl_ring.ready(); }

void NowaitForceFallback() { tl_ring.ForceFallback(); }

}  // namespace fgds::backend
