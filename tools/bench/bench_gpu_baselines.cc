// The baselines the libfgds mode is measured against, in the same run:
// what users write by hand today.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_gpu_device.h"
#include "tools/bench/progress.h"

namespace fgds::bench {
namespace {

// ReadFull / WriteFull: one block with pread/pwrite, repeated after short
// transfers and EINTR.
absl::Status ReadFull(int fd, char* buf, uint64_t len, uint64_t offset,
                      const std::string& path) {
  while (len > 0) {
    const ssize_t n = pread(fd, buf, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(absl::StrCat("read ", path), errno);
    if (n == 0) return absl::DataLossError(absl::StrCat(path, ": short file"));
    buf += n;
    offset += n;
    len -= n;
  }
  return absl::OkStatus();
}

absl::Status WriteFull(int fd, const char* buf, uint64_t len, uint64_t offset,
                       const std::string& path) {
  while (len > 0) {
    const ssize_t n = pwrite(fd, buf, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return PosixError(absl::StrCat("write ", path), n < 0 ? errno : EIO);
    buf += n;
    offset += n;
    len -= n;
  }
  return absl::OkStatus();
}

// naive: pread into pageable memory, then a synchronous cuMemcpyHtoD (CUDA
// stages pageable memory itself); the reverse for writes.
class NaiveWorker : public GpuWorker {
 public:
  using GpuWorker::GpuWorker;
  ~NaiveWorker() override {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    fd_ =
        open(spec_.path.c_str(), spec_.op == Op::kWrite ? O_WRONLY : O_RDONLY);
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    host_.reset(static_cast<char*>(std::aligned_alloc(4096, spec_.block_size)));
    return host_ == nullptr ? absl::ResourceExhaustedError("host buffer")
                            : absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool write = spec_.op == Op::kWrite;
    const uint64_t bs = spec_.block_size;
    for (uint64_t i = 0; i < blocks(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const uint64_t start = MonotonicNanos();
      if (write) {
        if (absl::Status s = CudaStatus(
                *api_, api_->cuMemcpyDtoH(host_.get(), DeviceAddress(i), bs),
                "cuMemcpyDtoH");
            !s.ok()) {
          return s;
        }
        if (absl::Status s =
                WriteFull(fd_, host_.get(), bs, FileOffset(i), spec_.path);
            !s.ok()) {
          return s;
        }
      } else {
        if (absl::Status s =
                ReadFull(fd_, host_.get(), bs, FileOffset(i), spec_.path);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = CudaStatus(
                *api_, api_->cuMemcpyHtoD(DeviceAddress(i), host_.get(), bs),
                "cuMemcpyHtoD");
            !s.ok()) {
          return s;
        }
      }
      CountBlock(stats, start);
    }
    IoDone(stats);
    if (write && fsync(fd_) != 0) {
      return PosixError(absl::StrCat("fsync ", spec_.path), errno);
    }
    stats.sync_done_ns = MonotonicNanos();
    return write ? absl::OkStatus() : FinishRead(/*warm_cache=*/false);
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  int fd_ = -1;
  std::unique_ptr<char, Free> host_;
};

// bounce-baseline: two pinned buffers per thread; while one block's
// asynchronous copy runs on the thread's stream, the next block is read
// into the other buffer (and the reverse for writes).
class BounceWorker : public GpuWorker {
 public:
  using GpuWorker::GpuWorker;
  ~BounceWorker() override {
    if (fd_ >= 0) close(fd_);
    if (api_ == nullptr || !BenchCuda().ok()) return;
    if (stream_ != nullptr) api_->cuStreamSynchronize(stream_);
    for (int i = 0; i < 2; ++i) {
      if (event_[i] != nullptr) api_->cuEventDestroy(event_[i]);
      if (pinned_[i] != nullptr) api_->cuMemFreeHost(pinned_[i]);
    }
    if (stream_ != nullptr) api_->cuStreamDestroy(stream_);
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    fd_ =
        open(spec_.path.c_str(), spec_.op == Op::kWrite ? O_WRONLY : O_RDONLY);
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    if (absl::Status s = CudaStatus(
            *api_, api_->cuStreamCreate(&stream_, cuda::kStreamNonBlocking),
            "cuStreamCreate");
        !s.ok()) {
      return s;
    }
    for (int i = 0; i < 2; ++i) {
      if (absl::Status s = CudaStatus(
              *api_, api_->cuMemHostAlloc(&pinned_[i], spec_.block_size, 0),
              "cuMemHostAlloc");
          !s.ok()) {
        return s;
      }
      if (absl::Status s = CudaStatus(
              *api_, api_->cuEventCreate(&event_[i], cuda::kEventDisableTiming),
              "cuEventCreate");
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    absl::Status status =
        spec_.op == Op::kWrite ? RunWrite(stop, stats) : RunRead(stop, stats);
    if (!status.ok()) return status;
    stats.sync_done_ns = MonotonicNanos();
    return spec_.op == Op::kWrite ? absl::OkStatus()
                                  : FinishRead(/*warm_cache=*/false);
  }

 private:
  absl::Status RunRead(const StopFlag& stop, WorkerStats& stats) {
    const uint64_t bs = spec_.block_size;
    bool pending[2] = {false, false};
    for (uint64_t i = 0; i < blocks(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const int b = static_cast<int>(i % 2);
      const uint64_t start = MonotonicNanos();
      if (pending[b]) {  // this buffer's previous copy must be done
        if (absl::Status s =
                CudaStatus(*api_, api_->cuEventSynchronize(event_[b]),
                           "cuEventSynchronize");
            !s.ok()) {
          return s;
        }
      }
      char* host = static_cast<char*>(pinned_[b]);
      if (absl::Status s = ReadFull(fd_, host, bs, FileOffset(i), spec_.path);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = CudaStatus(
              *api_,
              api_->cuMemcpyHtoDAsync(DeviceAddress(i), host, bs, stream_),
              "cuMemcpyHtoDAsync");
          !s.ok()) {
        return s;
      }
      api_->cuEventRecord(event_[b], stream_);
      pending[b] = true;
      CountBlock(stats, start);
    }
    if (absl::Status s = CudaStatus(*api_, api_->cuStreamSynchronize(stream_),
                                    "cuStreamSynchronize");
        !s.ok()) {
      return s;
    }
    IoDone(stats);
    return absl::OkStatus();
  }

  absl::Status RunWrite(const StopFlag& stop, WorkerStats& stats) {
    const uint64_t bs = spec_.block_size;
    auto copy_out = [&](uint64_t i) {
      const int b = static_cast<int>(i % 2);
      absl::Status s = CudaStatus(
          *api_,
          api_->cuMemcpyDtoHAsync(pinned_[b], DeviceAddress(i), bs, stream_),
          "cuMemcpyDtoHAsync");
      if (s.ok()) api_->cuEventRecord(event_[b], stream_);
      return s;
    };
    if (blocks() > 0) {
      if (absl::Status s = copy_out(0); !s.ok()) return s;
    }
    for (uint64_t i = 0; i < blocks(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const int b = static_cast<int>(i % 2);
      const uint64_t start = MonotonicNanos();
      if (absl::Status s = CudaStatus(
              *api_, api_->cuEventSynchronize(event_[b]), "cuEventSynchronize");
          !s.ok()) {
        return s;
      }
      // The next block's copy runs while this one is written.
      if (i + 1 < blocks()) {
        if (absl::Status s = copy_out(i + 1); !s.ok()) return s;
      }
      if (absl::Status s = WriteFull(fd_, static_cast<char*>(pinned_[b]), bs,
                                     FileOffset(i), spec_.path);
          !s.ok()) {
        return s;
      }
      CountBlock(stats, start);
    }
    IoDone(stats);
    if (fsync(fd_) != 0) {
      return PosixError(absl::StrCat("fsync ", spec_.path), errno);
    }
    return absl::OkStatus();
  }

  int fd_ = -1;
  cuda::CUstream stream_ = nullptr;
  void* pinned_[2] = {nullptr, nullptr};
  cuda::CUevent event_[2] = {nullptr, nullptr};
};

// h2d: the same blocks copied between pinned host memory and the device
// region, no file: the ceiling any bounce path can reach. Each thread
// queues its copies on its own stream and waits once at the end.
class H2dWorker : public GpuWorker {
 public:
  using GpuWorker::GpuWorker;
  ~H2dWorker() override {
    if (api_ == nullptr || !BenchCuda().ok()) return;
    if (stream_ != nullptr) {
      api_->cuStreamSynchronize(stream_);
      api_->cuStreamDestroy(stream_);
    }
    if (pinned_ != nullptr) api_->cuMemFreeHost(pinned_);
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    if (absl::Status s = CudaStatus(
            *api_, api_->cuStreamCreate(&stream_, cuda::kStreamNonBlocking),
            "cuStreamCreate");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CudaStatus(
            *api_, api_->cuMemHostAlloc(&pinned_, spec_.block_size, 0),
            "cuMemHostAlloc");
        !s.ok()) {
      return s;
    }
    FillBlockData(pinned_, spec_.block_size, spec_.data_tag + index_);
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool d2h = spec_.op == Op::kWrite;
    const uint64_t bs = spec_.block_size;
    const uint64_t start = MonotonicNanos();
    for (uint64_t i = 0; i < blocks(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const cuda::CUresult result =
          d2h ? api_->cuMemcpyDtoHAsync(pinned_, DeviceAddress(i), bs, stream_)
              : api_->cuMemcpyHtoDAsync(DeviceAddress(i), pinned_, bs, stream_);
      if (absl::Status s = CudaStatus(*api_, result, "async copy"); !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = CudaStatus(*api_, api_->cuStreamSynchronize(stream_),
                                    "cuStreamSynchronize");
        !s.ok()) {
      return s;
    }
    // Per-copy latency is not observable without a wait per copy; the
    // average stands in for each.
    const uint64_t each =
        blocks() == 0 ? 0 : (MonotonicNanos() - start) / blocks();
    for (uint64_t i = 0; i < blocks(); ++i) {
      stats.latency.Record(each);
      ++stats.ops;
      stats.bytes += bs;
    }
    if (spec_.progress != nullptr) spec_.progress->Add(stats.bytes);
    stats.io_done_ns = stats.sync_done_ns = MonotonicNanos();
    return absl::OkStatus();
  }

 private:
  cuda::CUstream stream_ = nullptr;
  void* pinned_ = nullptr;
};

template <typename Worker>
absl::StatusOr<PhaseResult> RunGpuPhase(const PhaseSpec& spec) {
  if (absl::StatusOr<const cuda::CudaApi*> gpu = BenchCuda(); !gpu.ok()) {
    return gpu.status();
  }
  return RunWorkers(spec, [&spec](int index) -> std::unique_ptr<PhaseWorker> {
    return std::make_unique<Worker>(spec, index);
  });
}

}  // namespace

absl::StatusOr<PhaseResult> RunNaiveGpuPhase(const PhaseSpec& spec) {
  return RunGpuPhase<NaiveWorker>(spec);
}

absl::StatusOr<PhaseResult> RunBounceBaselinePhase(const PhaseSpec& spec) {
  return RunGpuPhase<BounceWorker>(spec);
}

absl::StatusOr<PhaseResult> RunH2dPhase(const PhaseSpec& spec) {
  return RunGpuPhase<H2dWorker>(spec);
}

}  // namespace fgds::bench
