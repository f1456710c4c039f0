// The cufile mode: NVIDIA's cuFile (GPUDirect Storage, or its POSIX compat
// mode), loaded with dlopen so that fgds builds without it. When the
// library is missing or refuses the file (error 5027 on hosts whose disks
// it cannot identify), the mode fails and says so; the other modes' rows
// stand.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_gpu_device.h"

namespace fgds::bench {
namespace {

// The few cuFile declarations used (cufile.h, GDS 1.x ABI).
struct CUfileError {
  int err;     // CUfileOpError: 0 success, 5000 + n failures
  int cu_err;  // CUresult
};
struct CUfileDescr {
  int type;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
using CUfileHandle = void*;

struct CufileApi {
  CUfileError (*driver_open)();
  CUfileError (*handle_register)(CUfileHandle*, CUfileDescr*);
  void (*handle_deregister)(CUfileHandle);
  CUfileError (*buf_register)(const void*, size_t, int);
  CUfileError (*buf_deregister)(const void*);
  ssize_t (*read)(CUfileHandle, void*, size_t, off_t, off_t);
  ssize_t (*write)(CUfileHandle, const void*, size_t, off_t, off_t);
};

std::string CufileErrorText(CUfileError e) {
  return absl::StrFormat("cuFile error %d%s", e.err,
                         e.err == 5027 ? " (handle not registered: cuFile "
                                         "could not identify the file's "
                                         "device)"
                                       : "");
}

// LoadCufile dlopen()s libcufile once: $FGDS_CUFILE_LIB, else the usual
// names. Returns the table or why not.
absl::StatusOr<const CufileApi*> LoadCufile() {
  static absl::StatusOr<const CufileApi*>* loaded = [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("FGDS_CUFILE_LIB")) {
      candidates.push_back(env);
    }
    for (const char* name :
         {"libcufile.so.0", "libcufile.so",
          "/usr/local/cuda/lib64/libcufile.so.0",
          "/usr/local/cuda/targets/x86_64-linux/lib/libcufile.so.0"}) {
      candidates.push_back(name);
    }
    std::string errors;
    void* handle = nullptr;
    for (const std::string& name : candidates) {
      handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      const char* why = dlerror();
      absl::StrAppend(&errors, errors.empty() ? "" : "; ",
                      why != nullptr ? why : name);
    }
    if (handle == nullptr) {
      return new absl::StatusOr<const CufileApi*>(absl::FailedPreconditionError(
          absl::StrCat("cannot load libcufile: ", errors)));
    }
    auto* api = new CufileApi();
    const struct {
      const char* symbol;
      void** slot;
    } symbols[] = {
        {"cuFileDriverOpen", reinterpret_cast<void**>(&api->driver_open)},
        {"cuFileHandleRegister",
         reinterpret_cast<void**>(&api->handle_register)},
        {"cuFileHandleDeregister",
         reinterpret_cast<void**>(&api->handle_deregister)},
        {"cuFileBufRegister", reinterpret_cast<void**>(&api->buf_register)},
        {"cuFileBufDeregister", reinterpret_cast<void**>(&api->buf_deregister)},
        {"cuFileRead", reinterpret_cast<void**>(&api->read)},
        {"cuFileWrite", reinterpret_cast<void**>(&api->write)},
    };
    for (const auto& s : symbols) {
      *s.slot = dlsym(handle, s.symbol);
      if (*s.slot == nullptr) {
        return new absl::StatusOr<const CufileApi*>(
            absl::FailedPreconditionError(
                absl::StrCat("libcufile has no ", s.symbol)));
      }
    }
    return new absl::StatusOr<const CufileApi*>(api);
  }();
  return *loaded;
}

class CufileWorker : public GpuWorker {
 public:
  CufileWorker(const PhaseSpec& spec, int index, const CufileApi& cufile)
      : GpuWorker(spec, index), cufile_(cufile) {}
  ~CufileWorker() override {
    if (buf_registered_)
      cufile_.buf_deregister(reinterpret_cast<void*>(region_));
    if (handle_ != nullptr) cufile_.handle_deregister(handle_);
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Prepare() override {
    if (absl::Status s = PrepareDevice(); !s.ok()) return s;
    // cuFile's direct path needs O_DIRECT descriptors.
    fd_ = open(spec_.path.c_str(),
               (spec_.op == Op::kWrite ? O_WRONLY : O_RDONLY) | O_DIRECT);
    if (fd_ < 0) return PosixError(absl::StrCat("open ", spec_.path), errno);
    CUfileDescr descr{};
    descr.type = 1;
    descr.handle.fd = fd_;
    if (CUfileError e = cufile_.handle_register(&handle_, &descr); e.err != 0) {
      handle_ = nullptr;
      return absl::FailedPreconditionError(
          absl::StrCat("cuFileHandleRegister: ", CufileErrorText(e)));
    }
    if (CUfileError e = cufile_.buf_register(reinterpret_cast<void*>(region_),
                                             spec_.region_bytes, 0);
        e.err == 0) {
      buf_registered_ = true;  // else cuFile bounces internally
    }
    return absl::OkStatus();
  }

  absl::Status Run(const StopFlag& stop, WorkerStats& stats) override {
    const bool write = spec_.op == Op::kWrite;
    const uint64_t bs = spec_.block_size;
    void* base = reinterpret_cast<void*>(region_);
    for (uint64_t i = 0; i < blocks(); ++i) {
      if (stop.requested()) return absl::CancelledError("stopped");
      const uint64_t start = MonotonicNanos();
      const off_t file_offset = static_cast<off_t>(FileOffset(i));
      const off_t buf_offset = static_cast<off_t>(DeviceAddress(i) - region_);
      const ssize_t n =
          write ? cufile_.write(handle_, base, bs, file_offset, buf_offset)
                : cufile_.read(handle_, base, bs, file_offset, buf_offset);
      if (n != static_cast<ssize_t>(bs)) {
        return absl::DataLossError(
            absl::StrFormat("cuFile%s at %d returned %d (-1: errno %d)",
                            write ? "Write" : "Read", file_offset, n, errno));
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
  const CufileApi& cufile_;
  int fd_ = -1;
  CUfileHandle handle_ = nullptr;
  bool buf_registered_ = false;
};

}  // namespace

absl::StatusOr<PhaseResult> RunCufilePhase(const PhaseSpec& spec) {
  if (absl::StatusOr<const cuda::CudaApi*> gpu = BenchCuda(); !gpu.ok()) {
    return gpu.status();
  }
  absl::StatusOr<const CufileApi*> cufile = LoadCufile();
  if (!cufile.ok()) return cufile.status();
  static std::once_flag opened;
  static CUfileError open_error{};
  std::call_once(opened, [&] { open_error = (*cufile)->driver_open(); });
  if (open_error.err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuFileDriverOpen: ", CufileErrorText(open_error)));
  }
  return RunWorkers(spec, [&](int index) -> std::unique_ptr<PhaseWorker> {
    return std::make_unique<CufileWorker>(spec, index, **cufile);
  });
}

}  // namespace fgds::bench
