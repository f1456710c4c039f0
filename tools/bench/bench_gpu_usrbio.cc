// The usrbio-gpu mode: each worker keeps --qd usrbio entries of one block
// in flight on its own ior, between the file (through --mount's daemon) and
// its device region, wrapped as one GPU iov (the bounce path: the daemon
// fills pinned staging memory, the library copies it to the device).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fgds/usrbio.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_gpu_device.h"
#include "tools/bench/system.h"
#include "usrbio/gpu/gpu_iov.h"

namespace fgds::bench {
namespace {

absl::Status UsrbioError(absl::string_view what, int error) {
  return absl::ErrnoToStatus(-error, absl::StrCat("usrbio-gpu ", what));
}

// Every worker's GPU iov: the primary context of device 0, and the
// experiment knobs FGDS_BENCH_STAGING / FGDS_BENCH_CHUNK (0: the library's
// defaults).
fgds_iov_gpu_params BenchGpuIovParams() {
  fgds_iov_gpu_params params = {};
  params.flags = FGDS_IOV_GPU_PRIMARY_CTX;
  params.device = 0;
  params.staging_bytes = EnvNumber("FGDS_BENCH_STAGING");
  params.chunk_bytes = static_cast<uint32_t>(EnvNumber("FGDS_BENCH_CHUNK"));
  return params;
}

class UsrbioGpuWorker : public GpuWorker {
 public:
  UsrbioGpuWorker(const PhaseSpec& spec, int index) : GpuWorker(spec, index) {}

  ~UsrbioGpuWorker() override {
    if (file_id_ >= 0) fgds_fd_unregister(&session_, file_id_);
    if (ior_ready_) fgds_ior_destroy(&ior_);
    if (iov_ready_) fgds_iov_destroy(&iov_);
    if (session_ready_) fgds_session_close(&session_);
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    const bool write = spec_.op == Op::kWrite;
    if (int ret = fgds_session_open(&session_, spec_.path.c_str(), nullptr);
        ret != 0) {
      return UsrbioError(absl::StrCat("session on ", spec_.path), ret);
    }
    session_ready_ = true;
    const fgds_iov_gpu_params params = BenchGpuIovParams();
    if (int ret = fgds_iov_wrap_gpu(&session_, &iov_, region_,
                                    spec_.region_bytes, &params);
        ret != 0) {
      return UsrbioError("fgds_iov_wrap_gpu", ret);
    }
    iov_ready_ = true;
    depth_ = static_cast<unsigned>(std::max(1, spec_.queue_depth));
    fgds_ior_params ior_params = {};
    ior_params.entries = depth_;
    if (int ret = fgds_ior_create(&session_, &ior_, &ior_params); ret != 0) {
      return UsrbioError("fgds_ior_create", ret);
    }
    ior_ready_ = true;
    int fd = open(spec_.path.c_str(), write ? O_WRONLY : O_RDONLY);
    if (fd < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    file_id_ = fgds_fd_register(&session_, fd, 0);
    close(fd);
    if (file_id_ < 0) return UsrbioError("fgds_fd_register", file_id_);
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool write = spec_.op == Op::kWrite;
    std::vector<uint64_t> started(blocks());
    std::vector<fgds_cqe> cqes(depth_);
    absl::Status error;
    uint64_t next = 0;
    unsigned in_flight = 0;
    while (in_flight > 0 || (error.ok() && next < blocks())) {
      while (error.ok() && next < blocks() && in_flight < depth_) {
        if (stop.requested()) {
          error = absl::CancelledError("stopped");
          break;
        }
        started[next] = MonotonicNanos();
        int ret =
            fgds_prep_io(&ior_, &iov_, write ? FGDS_OP_WRITE : FGDS_OP_READ, 0,
                         reinterpret_cast<void*>(DeviceAddress(next)), file_id_,
                         FileOffset(next), spec_.block_size, next);
        if (ret != 0) {
          error = UsrbioError("prep", ret);
          break;
        }
        ++next;
        ++in_flight;
      }
      if (int ret = fgds_ior_submit(&ior_); ret < 0) {
        return UsrbioError("submit", ret);
      }
      if (in_flight == 0) break;
      int n = fgds_ior_wait(&ior_, cqes.data(), depth_, 1, -1);
      if (n < 0) return UsrbioError("wait", n);
      for (int i = 0; i < n; ++i) {
        --in_flight;
        const fgds_cqe& c = cqes[i];
        if (c.result != static_cast<int64_t>(spec_.block_size)) {
          if (error.ok()) {
            error = c.result < 0
                        ? UsrbioError(write ? "write" : "read",
                                      static_cast<int>(c.result))
                        : absl::DataLossError(absl::StrFormat(
                              "usrbio-gpu short transfer: %d bytes", c.result));
          }
          continue;
        }
        if (c.path != FGDS_PATH_BOUNCE && error.ok()) {
          error = absl::InternalError("usrbio-gpu: not the bounce path");
        }
        CountBlock(stats, started[c.userdata]);
      }
    }
    if (!error.ok()) return error;
    IoDone(stats);
    if (write) {
      // usrbio has no fsync entry yet: fsync through the mount reaches the
      // same backing inode.
      int fd = open(spec_.path.c_str(), O_WRONLY);
      if (fd < 0 || fsync(fd) != 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        return PosixError(absl::StrCat("fsync ", spec_.path), err);
      }
      close(fd);
    }
    stats.sync_done_ns = MonotonicNanos();
    // Aligned chunks read O_DIRECT and leave no cache: warm it for the
    // runner's warm row, as the libfgds mode does.
    return write ? absl::OkStatus() : FinishRead(/*warm_cache=*/true);
  }

 private:
  fgds_session session_ = {};
  fgds_iov iov_ = {};
  fgds_ior ior_ = {};
  unsigned depth_ = 1;
  int file_id_ = -1;
  bool session_ready_ = false;
  bool iov_ready_ = false;
  bool ior_ready_ = false;
};

}  // namespace

absl::StatusOr<PhaseResult> RunUsrbioGpuPhase(const PhaseSpec& spec) {
  if (absl::StatusOr<const cuda::CudaApi*> gpu = BenchCuda(); !gpu.ok()) {
    return gpu.status();
  }
  // The staging shape, for the reader of the run's log (the page-cached rate
  // depends on it: docs/usrbio.md).
  const usrbio::gpu::StagingShape shape =
      usrbio::gpu::ResolveStagingShape(BenchGpuIovParams());
  std::fprintf(stderr,
               "usrbio-gpu %s: one GPU iov per thread, %llu KiB chunks, %llu "
               "KiB staging each\n",
               spec.op == Op::kWrite ? "write" : "read",
               static_cast<unsigned long long>(shape.chunk_bytes >> 10),
               static_cast<unsigned long long>(shape.staging_bytes >> 10));
  return RunWorkers(spec, [&](int index) -> std::unique_ptr<PhaseWorker> {
    return std::make_unique<UsrbioGpuWorker>(spec, index);
  });
}

}  // namespace fgds::bench
