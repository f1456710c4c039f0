#include "backend/uring_engine.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/errno_status.h"

namespace fgds::backend {
namespace {

// io_uring lengths are 32-bit; larger requests go in pieces of this size
// through the short-transfer path.
constexpr size_t kMaxPiece = size_t{1} << 30;
// user_data of the no-op that wakes a reaper for shutdown.
constexpr uint64_t kStopTag = 0;

// A free submission entry. When the queue is full of prepared entries, they
// go to the kernel first, which frees every slot; io_uring_submit can fail
// transiently (EBUSY while completions back up), so this retries until a
// slot is free. REQUIRES: the ring's mutex.
io_uring_sqe* GetSqe(io_uring* uring) {
  for (;;) {
    if (io_uring_sqe* sqe = io_uring_get_sqe(uring)) return sqe;
    io_uring_submit(uring);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<UringEngine>> UringEngine::Create(
    const IoEngineOptions& options) {
  std::unique_ptr<UringEngine> engine(new UringEngine());
  int rings = std::max(1, options.rings);
  for (int i = 0; i < rings; ++i) {
    auto ring = std::make_unique<Ring>();
    io_uring_params params = {};
    int ret =
        io_uring_queue_init_params(options.queue_depth, &ring->uring, &params);
    if (ret < 0) return PosixError("io_uring_queue_init", -ret);
    ring->max_inflight = params.cq_entries;
    engine->rings_.push_back(std::move(ring));
  }
  for (auto& ring : engine->rings_) {
    ring->reaper = std::thread(ReapLoop, ring.get());
  }
  return engine;
}

UringEngine::~UringEngine() {
  for (auto& ring : rings_) {
    {
      MutexLock lock(&ring->mu);
      ring->stopping = true;
      io_uring_sqe* sqe = GetSqe(&ring->uring);
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kStopTag);
      io_uring_submit(&ring->uring);
    }
    ring->reaper.join();
    io_uring_queue_exit(&ring->uring);
  }
}

void UringEngine::QueueLocked(Ring& ring, Op* op) {
  io_uring_sqe* sqe = GetSqe(&ring.uring);
  const IoRequest& r = op->request;
  auto len = static_cast<unsigned>(std::min(r.len - op->done, kMaxPiece));
  char* buf = static_cast<char*>(r.buf) + op->done;
  uint64_t offset = r.offset + op->done;
  if (r.op == IoOp::kRead) {
    io_uring_prep_read(sqe, r.fd, buf, len, offset);
  } else {
    io_uring_prep_write(sqe, r.fd, buf, len, offset);
  }
  io_uring_sqe_set_data(sqe, op);
}

void UringEngine::Submit(std::span<const IoRequest> batch) {
  if (batch.empty()) return;
  Ring& ring = *rings_[next_ring_.fetch_add(1, std::memory_order_relaxed) %
                       rings_.size()];
  MutexLock lock(&ring.mu);
  for (const IoRequest& request : batch) {
    while (ring.inflight >= ring.max_inflight) {
      // Hand over what is queued before sleeping, so the reaper can make
      // room; otherwise the ring could wait on itself.
      io_uring_submit(&ring.uring);
      ring.room.Wait(&ring.mu);
    }
    ++ring.inflight;
    if (request.len == 0) {
      // Nothing to transfer, but completion still comes from the reaper so
      // callers see one completion model.
      auto* op = new Op{request, 0};
      io_uring_sqe* sqe = GetSqe(&ring.uring);
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, op);
      continue;
    }
    QueueLocked(ring, new Op{request, 0});
  }
  io_uring_submit(&ring.uring);
}

void UringEngine::ReapLoop(Ring* ring) {
  std::vector<std::pair<Op*, int>> events;
  std::vector<std::pair<IoCompletion*, int64_t>> finished;
  bool stop_seen = false;
  for (;;) {
    io_uring_cqe* cqe = nullptr;
    int ret = io_uring_wait_cqe(&ring->uring, &cqe);
    if (ret == -EINTR || ret == -EAGAIN) continue;
    if (ret < 0) {
      // Only a broken ring gets here; nothing more can complete.
      break;
    }
    // Copy the events out and release the completion queue at once; all op
    // state is then handled under the ring mutex, which is also what orders
    // the submitter's writes to an Op before our reads of it.
    unsigned head;
    unsigned count = 0;
    io_uring_for_each_cqe(&ring->uring, head, cqe) {
      events.emplace_back(static_cast<Op*>(io_uring_cqe_get_data(cqe)),
                          cqe->res);
      ++count;
    }
    io_uring_cq_advance(&ring->uring, count);

    {
      MutexLock lock(&ring->mu);
      bool requeued = false;
      for (auto [op, res] : events) {
        if (op == nullptr) {
          stop_seen = true;
          continue;
        }
        if (res == -EAGAIN || res == -EINTR) {
          QueueLocked(*ring, op);
          requeued = true;
          continue;
        }
        if (res > 0) {
          op->done += static_cast<size_t>(res);
          if (op->done < op->request.len) {
            QueueLocked(*ring, op);
            requeued = true;
            continue;
          }
        }
        // Done: whole length, end of file (res == 0) or an error. An error
        // after partial progress reports the progress, as pread does.
        int64_t result = res < 0 && op->done == 0
                             ? static_cast<int64_t>(res)
                             : static_cast<int64_t>(op->done);
        finished.emplace_back(op->request.completion, result);
        delete op;
        --ring->inflight;
      }
      if (requeued) io_uring_submit(&ring->uring);
      if (!finished.empty()) ring->room.SignalAll();
    }
    events.clear();
    for (auto [completion, result] : finished) completion->Complete(result);
    finished.clear();

    if (stop_seen) {
      MutexLock lock(&ring->mu);
      if (ring->inflight == 0) break;
    }
  }
}

}  // namespace fgds::backend
