#include "tools/bench/bench_posix.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/block_order.h"
#include "tools/bench/progress.h"
#include "tools/bench/workers.h"

namespace fgds::bench {
namespace {

class SyncWorker : public PhaseWorker {
 public:
  SyncWorker(const PhaseSpec& spec, int index)
      : spec_(spec),
        index_(index),
        region_start_(static_cast<uint64_t>(index) * spec.region_bytes),
        order_(Pattern::kSeq, 0, 0) {}

  ~SyncWorker() override {
    if (fd_ >= 0) close(fd_);
    std::free(buf_);
  }

  absl::Status Prepare() override {
    const bool write = spec_.op == Op::kWrite;
    // No O_TRUNC: the runner created the file empty, and other workers may
    // already be writing their regions.
    fd_ = open(spec_.path.c_str(), write ? O_WRONLY : O_RDONLY);
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    // Page-aligned like a typical I/O buffer, so the kernel takes its usual
    // (not a misaligned) copy path.
    if (posix_memalign(&buf_, 4096, spec_.block_size) != 0) {
      return absl::ResourceExhaustedError("out of memory for the I/O buffer");
    }
    FillBlockData(buf_, spec_.block_size, spec_.data_tag + index_);
    order_ = BlockOrder(spec_.pattern, spec_.region_bytes / spec_.block_size,
                        spec_.data_tag * 31 + index_);
    if (spec_.pattern == Pattern::kSeq &&
        lseek(fd_, static_cast<off_t>(region_start_), SEEK_SET) < 0) {
      return PosixError(absl::StrCat("lseek ", spec_.path), errno);
    }
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool write = spec_.op == Op::kWrite;
    const uint64_t bs = spec_.block_size;
    for (uint64_t i = 0; i < order_.size(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const uint64_t offset = region_start_ + order_[i] * bs;
      if (write) StampBlock(buf_, bs, offset, spec_.data_tag);
      const uint64_t begin = MonotonicNanos();
      absl::Status status = write ? WriteBlock(offset) : ReadBlock(offset);
      const uint64_t end = MonotonicNanos();
      if (!status.ok()) return status;
      if (!write && !CheckBlock(buf_, bs, offset, spec_.data_tag)) {
        return absl::DataLossError(absl::StrFormat(
            "%s: block at offset %d does not hold what the write phase wrote",
            spec_.path, offset));
      }
      stats.latency.Record(end - begin);
      ++stats.ops;
      stats.bytes += bs;
      if (spec_.progress != nullptr) spec_.progress->Add(bs);
    }
    IoDone(stats);
    if (write && fsync(fd_) != 0) {
      return PosixError(absl::StrCat("fsync ", spec_.path), errno);
    }
    stats.sync_done_ns = MonotonicNanos();
    return absl::OkStatus();
  }

 private:
  // One block, repeating the call after a short transfer or EINTR as any
  // careful application would; a sequential pass relies on the file offset
  // advancing, a random one passes the offset.
  absl::Status WriteBlock(uint64_t offset) {
    const char* p = static_cast<const char*>(buf_);
    uint64_t left = spec_.block_size;
    while (left > 0) {
      const ssize_t n = spec_.pattern == Pattern::kSeq
                            ? write(fd_, p, left)
                            : pwrite(fd_, p, left, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return PosixError(absl::StrFormat("write %s at %d", spec_.path, offset),
                          n < 0 ? errno : EIO);
      }
      p += n;
      offset += n;
      left -= n;
    }
    return absl::OkStatus();
  }

  absl::Status ReadBlock(uint64_t offset) {
    char* p = static_cast<char*>(buf_);
    uint64_t left = spec_.block_size;
    while (left > 0) {
      const ssize_t n = spec_.pattern == Pattern::kSeq
                            ? read(fd_, p, left)
                            : pread(fd_, p, left, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return PosixError(absl::StrFormat("read %s at %d", spec_.path, offset),
                          errno);
      }
      if (n == 0) {
        return absl::DataLossError(absl::StrFormat(
            "read %s at %d: unexpected end of file", spec_.path, offset));
      }
      p += n;
      offset += n;
      left -= n;
    }
    return absl::OkStatus();
  }

  const PhaseSpec& spec_;
  const int index_;
  const uint64_t region_start_;
  BlockOrder order_;
  int fd_ = -1;
  void* buf_ = nullptr;
};

}  // namespace

absl::StatusOr<PhaseResult> RunSyncPhase(const PhaseSpec& spec) {
  return RunWorkers(spec, [&spec](int index) -> std::unique_ptr<PhaseWorker> {
    return std::make_unique<SyncWorker>(spec, index);
  });
}

}  // namespace fgds::bench
