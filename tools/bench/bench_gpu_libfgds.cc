// The libfgds mode: each worker keeps --qd asynchronous I/Os of one block
// in flight on a shared driver (the engine spreads their chunks over its
// own workers), into and out of its registered device region.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <deque>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fgds/fgds.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_gpu_device.h"
#include "tools/bench/system.h"

namespace fgds::bench {
namespace {

absl::Status FgdsError(absl::string_view what, int error) {
  return absl::ErrnoToStatus(-error,
                             absl::StrCat(what, ": ", fgds_last_error()));
}

class LibfgdsWorker : public GpuWorker {
 public:
  LibfgdsWorker(const PhaseSpec& spec, int index, fgds_driver* driver)
      : GpuWorker(spec, index), driver_(driver) {}

  ~LibfgdsWorker() override {
    if (registered_) {
      fgds_buf_deregister(driver_, reinterpret_cast<void*>(region_));
    }
    if (fd_ >= 0) {
      fgds_file_deregister(driver_, fd_);
      close(fd_);
    }
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    const bool write = spec_.op == Op::kWrite;
    // A plain descriptor, as an application has: libfgds opens its
    // O_DIRECT twin itself.
    fd_ = open(spec_.path.c_str(), write ? O_WRONLY : O_RDONLY);
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    if (int error = fgds_file_register(driver_, fd_); error != 0) {
      return FgdsError("fgds_file_register", error);
    }
    if (int error = fgds_buf_register(driver_, reinterpret_cast<void*>(region_),
                                      spec_.region_bytes, 0);
        error != 0) {
      return FgdsError("fgds_buf_register", error);
    }
    registered_ = true;
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool write = spec_.op == Op::kWrite;
    const int depth = std::max(1, spec_.queue_depth);
    std::vector<fgds_io> ios(depth);
    std::vector<uint64_t> started(depth);
    std::vector<int> free_slots;
    for (int i = depth - 1; i >= 0; --i) free_slots.push_back(i);
    std::deque<int> in_flight;  // oldest first
    absl::Status error;
    uint64_t next = 0;
    while (!in_flight.empty() || (error.ok() && next < blocks())) {
      while (error.ok() && next < blocks() && !free_slots.empty()) {
        if (stop.requested()) {
          error = absl::CancelledError("stopped");
          break;
        }
        const int slot = free_slots.back();
        free_slots.pop_back();
        fgds_io& io = ios[slot];
        io = {};
        io.opcode = write ? FGDS_OP_WRITE : FGDS_OP_READ;
        io.fd = fd_;
        io.devptr = reinterpret_cast<void*>(region_);
        io.size = spec_.block_size;
        io.file_offset = static_cast<int64_t>(FileOffset(next));
        io.buf_offset = static_cast<int64_t>(DeviceAddress(next) - region_);
        started[slot] = MonotonicNanos();
        if (int n = fgds_io_submit(driver_, &io, 1); n != 1) {
          error = FgdsError("fgds_io_submit", n);
          free_slots.push_back(slot);
          break;
        }
        in_flight.push_back(slot);
        ++next;
      }
      if (in_flight.empty()) break;
      const int slot = in_flight.front();
      in_flight.pop_front();
      fgds_io& io = ios[slot];
      if (int status = fgds_io_wait(driver_, &io, -1); status != 0) {
        return FgdsError("fgds_io_wait", status);  // io stays in flight
      }
      free_slots.push_back(slot);
      if (io.result != static_cast<int64_t>(spec_.block_size) && error.ok()) {
        error =
            io.result < 0
                ? absl::ErrnoToStatus(
                      static_cast<int>(-io.result),
                      absl::StrFormat("libfgds %s at %d",
                                      write ? "write" : "read", io.file_offset))
                : absl::DataLossError(
                      absl::StrFormat("libfgds short transfer at %d: %d bytes",
                                      io.file_offset, io.result));
        continue;
      }
      CountBlock(stats, started[slot]);
    }
    if (!error.ok()) return error;
    IoDone(stats);
    if (write && fsync(fd_) != 0) {
      return PosixError(absl::StrCat("fsync ", spec_.path), errno);
    }
    stats.sync_done_ns = MonotonicNanos();
    return write ? absl::OkStatus() : FinishRead(/*warm_cache=*/true);
  }

 private:
  fgds_driver* const driver_;
  int fd_ = -1;
  bool registered_ = false;
};

}  // namespace

absl::StatusOr<PhaseResult> RunLibfgdsPhase(const PhaseSpec& spec) {
  if (absl::StatusOr<const cuda::CudaApi*> gpu = BenchCuda(); !gpu.ok()) {
    return gpu.status();
  }
  fgds_driver_params params{};
  params.flags = FGDS_DRIVER_PRIMARY_CTX;
  params.device = 0;
  params.workers = static_cast<uint32_t>(EnvNumber("FGDS_BENCH_WORKERS"));
  params.chunk_bytes = EnvNumber("FGDS_BENCH_CHUNK");
  params.staging_bytes = EnvNumber("FGDS_BENCH_STAGING");
  fgds_driver* driver = nullptr;
  if (int error = fgds_driver_open(&driver, &params); error != 0) {
    return FgdsError("fgds_driver_open", error);
  }
  absl::StatusOr<PhaseResult> result =
      RunWorkers(spec, [&](int index) -> std::unique_ptr<PhaseWorker> {
        return std::make_unique<LibfgdsWorker>(spec, index, driver);
      });
  // The path report, for the reader of the run's log: which path the bytes
  // took and where their file side went.
  fgds_driver_info info;
  fgds_driver_stats stats;
  if (fgds_driver_query(driver, &info) == 0 &&
      fgds_driver_get_stats(driver, &stats) == 0) {
    std::fprintf(stderr,
                 "libfgds %s: path %s (%u workers, %llu KiB chunks, %llu MiB "
                 "staging); file side: page cache %.2f GB, O_DIRECT %.2f GB, "
                 "buffered %.2f GB; direct path unavailable: %s\n",
                 spec.op == Op::kWrite ? "write" : "read",
                 info.path == FGDS_GPU_PATH_DIRECT ? "direct" : "bounce",
                 info.workers,
                 static_cast<unsigned long long>(info.chunk_bytes >> 10),
                 static_cast<unsigned long long>(info.staging_bytes >> 20),
                 static_cast<double>(stats.bytes_page_cache) / 1e9,
                 static_cast<double>(stats.bytes_o_direct) / 1e9,
                 static_cast<double>(stats.bytes_buffered) / 1e9,
                 info.direct_unavailable);
  }
  fgds_driver_close(driver);
  return result;
}

}  // namespace fgds::bench
