#include "tools/bench/bench_uring.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/block_order.h"
#include "tools/bench/progress.h"
#include "tools/bench/workers.h"

namespace fgds::bench {
namespace {

class UringWorker : public PhaseWorker {
 public:
  UringWorker(const PhaseSpec& spec, int index)
      : spec_(spec),
        index_(index),
        region_start_(static_cast<uint64_t>(index) * spec.region_bytes),
        order_(Pattern::kSeq, 0, 0) {}

  ~UringWorker() override {
    if (ring_ready_) io_uring_queue_exit(&ring_);
    if (fd_ >= 0) close(fd_);
    if (leak_buffers_) return;
    for (Slot& slot : slots_) std::free(slot.buf);
  }

  absl::Status Prepare() override {
    const bool write = spec_.op == Op::kWrite;
    fd_ = open(spec_.path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_DIRECT);
    if (fd_ < 0 && errno == EINVAL) {
      return absl::FailedPreconditionError(
          absl::StrCat("open ", spec_.path,
                       " with O_DIRECT: not supported by this file system"));
    }
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);

    const uint64_t blocks = spec_.region_bytes / spec_.block_size;
    const int depth = static_cast<int>(
        std::min<uint64_t>(static_cast<uint64_t>(spec_.queue_depth), blocks));
    if (int ret = io_uring_queue_init(depth, &ring_, 0); ret < 0) {
      return PosixError("io_uring_queue_init", -ret);
    }
    ring_ready_ = true;

    slots_.resize(depth);
    std::vector<iovec> iovecs(depth);
    for (int i = 0; i < depth; ++i) {
      if (posix_memalign(&slots_[i].buf, 4096, spec_.block_size) != 0) {
        return absl::ResourceExhaustedError(
            absl::StrFormat("out of memory for %d buffers of --bs %d", depth,
                            spec_.block_size));
      }
      FillBlockData(slots_[i].buf, spec_.block_size,
                    spec_.data_tag + index_ * 4096 + i);
      iovecs[i] = {slots_[i].buf, spec_.block_size};
    }
    // Fixed buffers save the per-I/O page pinning, as a tuned application
    // would do; if the memlock limit refuses them, plain buffers still work.
    fixed_buffers_ =
        io_uring_register_buffers(&ring_, iovecs.data(), depth) == 0;
    order_ = BlockOrder(spec_.pattern, blocks, spec_.data_tag * 31 + index_);
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    std::vector<int> free_slots;
    for (int i = static_cast<int>(slots_.size()) - 1; i >= 0; --i) {
      free_slots.push_back(i);
    }
    std::vector<int> queued;  // prepared since the last submit
    absl::Status error;       // first failure; then only drain
    uint64_t next = 0;
    int in_flight = 0;
    while (in_flight > 0 || (error.ok() && next < order_.size())) {
      if (error.ok() && stop.requested()) {
        error = absl::CancelledError("stopped");
      }
      while (error.ok() && next < order_.size() && !free_slots.empty()) {
        const int slot = free_slots.back();
        free_slots.pop_back();
        Queue(slot, region_start_ + order_[next++] * spec_.block_size);
        queued.push_back(slot);
      }
      const uint64_t now = MonotonicNanos();
      for (int slot : queued) slots_[slot].start_ns = now;
      in_flight += static_cast<int>(queued.size());
      queued.clear();

      int ret = io_uring_submit_and_wait(&ring_, 1);
      if (ret == -EINTR) continue;  // a signal; the loop re-checks stop
      if (ret < 0) {
        // The kernel may still be writing into buffers of requests in
        // flight, and ring teardown does not wait for them: the buffers
        // must outlive this worker rather than be handed back to malloc.
        leak_buffers_ = true;
        return PosixError("io_uring_submit_and_wait", -ret);
      }
      io_uring_cqe* cqe = nullptr;
      while (io_uring_peek_cqe(&ring_, &cqe) == 0) {
        const int slot = static_cast<int>(
            reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe)));
        const int res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        --in_flight;
        free_slots.push_back(slot);
        absl::Status status = Complete(slot, res, stats);
        if (error.ok() && !status.ok()) error = std::move(status);
      }
    }
    if (!error.ok()) return error;
    IoDone(stats);
    if (spec_.op == Op::kWrite && fsync(fd_) != 0) {
      return PosixError(absl::StrCat("fsync ", spec_.path), errno);
    }
    stats.sync_done_ns = MonotonicNanos();
    return absl::OkStatus();
  }

 private:
  struct Slot {
    void* buf = nullptr;
    uint64_t offset = 0;
    uint64_t start_ns = 0;
  };

  // Queue fills one SQE for `slot` at `offset`. The ring has as many
  // entries as there are slots, so a free slot always finds a free SQE.
  void Queue(int slot, uint64_t offset) {
    Slot& s = slots_[slot];
    s.offset = offset;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    const unsigned len = static_cast<unsigned>(spec_.block_size);
    if (spec_.op == Op::kWrite) {
      StampBlock(s.buf, spec_.block_size, offset, spec_.data_tag);
      if (fixed_buffers_) {
        io_uring_prep_write_fixed(sqe, fd_, s.buf, len, offset, slot);
      } else {
        io_uring_prep_write(sqe, fd_, s.buf, len, offset);
      }
    } else if (fixed_buffers_) {
      io_uring_prep_read_fixed(sqe, fd_, s.buf, len, offset, slot);
    } else {
      io_uring_prep_read(sqe, fd_, s.buf, len, offset);
    }
    io_uring_sqe_set_data(
        sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(slot)));
  }

  absl::Status Complete(int slot, int res, WorkerStats& stats) {
    const Slot& s = slots_[slot];
    return FinishQueuedIo(spec_, "io_uring", s.buf, s.offset, s.start_ns, res,
                          stats);
  }

  const PhaseSpec& spec_;
  const int index_;
  const uint64_t region_start_;
  BlockOrder order_;
  int fd_ = -1;
  io_uring ring_;
  bool ring_ready_ = false;
  bool fixed_buffers_ = false;
  // Set when Run gave up with requests possibly in flight (see Run).
  bool leak_buffers_ = false;
  std::vector<Slot> slots_;
};

}  // namespace

absl::StatusOr<PhaseResult> RunUringDirectPhase(const PhaseSpec& spec) {
  return RunWorkers(spec, [&spec](int index) -> std::unique_ptr<PhaseWorker> {
    return std::make_unique<UringWorker>(spec, index);
  });
}

}  // namespace fgds::bench
