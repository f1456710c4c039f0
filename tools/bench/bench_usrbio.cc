#include "tools/bench/bench_usrbio.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fgds/usrbio.h"
#include "tools/bench/block_order.h"
#include "tools/bench/progress.h"
#include "tools/bench/system.h"
#include "tools/bench/workers.h"

namespace fgds::bench {
namespace {

class UsrbioWorker : public PhaseWorker {
 public:
  UsrbioWorker(const PhaseSpec& spec, int index, bool direct)
      : spec_(spec),
        index_(index),
        direct_(direct),
        region_start_(static_cast<uint64_t>(index) * spec.region_bytes),
        order_(Pattern::kSeq, 0, 0) {}

  ~UsrbioWorker() override {
    // Requests may still be in flight after an error: the daemon finishes
    // them into its own mapping, so dropping ours is safe.
    if (ior_ready_) fgds_ior_destroy(&ior_);
    if (iov_ready_) fgds_iov_destroy(&iov_);
    if (session_ready_) fgds_session_close(&session_);
  }

  absl::Status Prepare() override {
    const bool write = spec_.op == Op::kWrite;
    if (int ret = fgds_session_open(&session_, spec_.path.c_str(), nullptr);
        ret != 0) {
      return PosixError(absl::StrCat("usrbio session on ", spec_.path), -ret);
    }
    session_ready_ = true;
    const uint64_t blocks = spec_.region_bytes / spec_.block_size;
    depth_ = static_cast<uint32_t>(
        std::min<uint64_t>(std::max(spec_.queue_depth, 1), blocks));
    fgds_iov_params iov_params = {};
    iov_params.size = depth_ * spec_.block_size;
    iov_params.numa_node = -1;
    if (int ret = fgds_iov_create(&session_, &iov_, &iov_params); ret != 0) {
      return PosixError("usrbio iov", -ret);
    }
    iov_ready_ = true;
    fgds_ior_params ior_params = {};
    ior_params.entries = depth_;
    ior_params.flags = direct_ ? 0 : FGDS_IOR_BUFFERED;
    // How long the daemon's ring thread and fgds_ior_wait poll before
    // sleeping; 0 unless set for an experiment.
    ior_params.spin_us = static_cast<uint32_t>(EnvNumber("FGDS_BENCH_SPIN_US"));
    if (int ret = fgds_ior_create(&session_, &ior_, &ior_params); ret != 0) {
      return PosixError("usrbio ior", -ret);
    }
    ior_ready_ = true;
    int fd = open(spec_.path.c_str(), write ? O_WRONLY : O_RDONLY);
    if (fd < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    file_id_ = fgds_fd_register(&session_, fd, 0);
    close(fd);
    if (file_id_ < 0) return PosixError("usrbio register", -file_id_);
    slots_.resize(depth_);
    for (uint32_t i = 0; i < depth_; ++i) {
      slots_[i].buf = static_cast<char*>(iov_.base) + i * spec_.block_size;
      FillBlockData(slots_[i].buf, spec_.block_size,
                    spec_.data_tag + index_ * 4096 + i);
    }
    order_ = BlockOrder(spec_.pattern, blocks, spec_.data_tag * 31 + index_);
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    std::vector<uint32_t> free_slots;
    for (uint32_t i = depth_; i > 0; --i) free_slots.push_back(i - 1);
    std::vector<fgds_cqe> cqes(depth_);
    absl::Status error;
    uint64_t next = 0;
    uint32_t in_flight = 0;
    while (in_flight > 0 || (error.ok() && next < order_.size())) {
      if (error.ok() && stop.requested())
        error = absl::CancelledError("stopped");
      const uint64_t now = MonotonicNanos();
      while (error.ok() && next < order_.size() && !free_slots.empty()) {
        const uint32_t slot = free_slots.back();
        free_slots.pop_back();
        Slot& s = slots_[slot];
        s.offset = region_start_ + order_[next++] * spec_.block_size;
        s.start_ns = now;
        if (spec_.op == Op::kWrite) {
          StampBlock(s.buf, spec_.block_size, s.offset, spec_.data_tag);
        }
        int ret = fgds_prep_io(
            &ior_, &iov_, spec_.op == Op::kWrite ? FGDS_OP_WRITE : FGDS_OP_READ,
            0, s.buf, file_id_, s.offset, spec_.block_size, slot);
        if (ret != 0) return PosixError("usrbio prep", -ret);
        ++in_flight;
      }
      if (int ret = fgds_ior_submit(&ior_); ret < 0) {
        return PosixError("usrbio submit", -ret);
      }
      int n = fgds_ior_wait(&ior_, cqes.data(), depth_, 1, -1);
      if (n < 0) return PosixError("usrbio wait", -n);
      for (int i = 0; i < n; ++i) {
        const auto slot = static_cast<uint32_t>(cqes[i].userdata);
        --in_flight;
        free_slots.push_back(slot);
        absl::Status status = Complete(slot, cqes[i], stats);
        if (error.ok() && !status.ok()) error = std::move(status);
      }
    }
    if (!error.ok()) return error;
    IoDone(stats);
    if (spec_.op == Op::kWrite) {
      // The writes are all reaped: an fsync entry now covers them.
      if (int ret = fgds_prep_fsync(&ior_, file_id_, 0, 0); ret != 0) {
        return PosixError("usrbio fsync prep", -ret);
      }
      fgds_cqe cqe;
      if (int ret = fgds_ior_submit(&ior_); ret < 0) {
        return PosixError("usrbio submit", -ret);
      }
      if (int n = fgds_ior_wait(&ior_, &cqe, 1, 1, -1); n != 1) {
        return PosixError("usrbio wait", n < 0 ? -n : EIO);
      }
      if (cqe.result < 0) {
        return PosixError(absl::StrCat("usrbio fsync ", spec_.path),
                          static_cast<int>(-cqe.result));
      }
    }
    stats.sync_done_ns = MonotonicNanos();
    return absl::OkStatus();
  }

 private:
  struct Slot {
    char* buf = nullptr;
    uint64_t offset = 0;
    uint64_t start_ns = 0;
  };

  absl::Status Complete(uint32_t slot, const fgds_cqe& cqe,
                        WorkerStats& stats) {
    const Slot& s = slots_[slot];
    return FinishQueuedIo(spec_, "usrbio", s.buf, s.offset, s.start_ns,
                          cqe.result, stats);
  }

  const PhaseSpec& spec_;
  const int index_;
  const bool direct_;
  const uint64_t region_start_;
  BlockOrder order_;
  fgds_session session_ = {};
  fgds_iov iov_ = {};
  fgds_ior ior_ = {};
  bool session_ready_ = false;
  bool iov_ready_ = false;
  bool ior_ready_ = false;
  int file_id_ = -1;
  uint32_t depth_ = 1;
  std::vector<Slot> slots_;
};

absl::StatusOr<PhaseResult> Run(const PhaseSpec& spec, bool direct) {
  return RunWorkers(
      spec, [&spec, direct](int index) -> std::unique_ptr<PhaseWorker> {
        return std::make_unique<UsrbioWorker>(spec, index, direct);
      });
}

}  // namespace

absl::StatusOr<PhaseResult> RunUsrbioPhase(const PhaseSpec& spec) {
  return Run(spec, false);
}

absl::StatusOr<PhaseResult> RunUsrbioDirectPhase(const PhaseSpec& spec) {
  return Run(spec, true);
}

}  // namespace fgds::bench
