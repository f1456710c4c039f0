#include "tools/bench/bench_gpu_device.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/progress.h"
#include "usrbio/cuda/cuda_error.h"

namespace fgds::bench {

absl::StatusOr<const cuda::CudaApi*> BenchCuda() {
  struct Gpu {
    const cuda::CudaApi* api = nullptr;
    cuda::CUcontext context = nullptr;
    absl::Status status;
  };
  static const Gpu* gpu = [] {
    auto* g = new Gpu();
    const cuda::CudaLoad& load = cuda::Cuda();
    if (load.api == nullptr) {
      g->status = absl::FailedPreconditionError(
          absl::StrCat("GPU modes need a GPU: ", load.message));
      return g;
    }
    cuda::CUdevice device = 0;
    cuda::CUresult result = load.api->cuDeviceGet(&device, 0);
    if (result == cuda::kCudaSuccess) {
      result = load.api->cuDevicePrimaryCtxRetain(&g->context, device);
    }
    if (result != cuda::kCudaSuccess) {
      g->status = CudaStatus(*load.api, result, "device 0's primary context");
      return g;
    }
    g->api = load.api;
    return g;
  }();
  if (!gpu->status.ok()) return gpu->status;
  const cuda::CUresult result = gpu->api->cuCtxSetCurrent(gpu->context);
  if (result != cuda::kCudaSuccess) {
    return CudaStatus(*gpu->api, result, "cuCtxSetCurrent");
  }
  return gpu->api;
}

absl::Status CudaStatus(const cuda::CudaApi& api, cuda::CUresult result,
                        absl::string_view what) {
  if (result == cuda::kCudaSuccess) return absl::OkStatus();
  return absl::ErrnoToStatus(
      cuda::CuResultToErrno(result),
      absl::StrCat(what, ": ", cuda::CuResultText(&api, result)));
}

GpuWorker::GpuWorker(const PhaseSpec& spec, int index)
    : spec_(spec),
      index_(index),
      region_start_(static_cast<uint64_t>(index) * spec.region_bytes),
      order_(Pattern::kSeq, 0, 0) {}

GpuWorker::~GpuWorker() {
  if (warm_cache_) WarmCache();
  if (region_ != 0 && BenchCuda().ok()) api_->cuMemFree(region_);
}

absl::Status GpuWorker::PrepareDevice() {
  absl::StatusOr<const cuda::CudaApi*> api = BenchCuda();
  if (!api.ok()) return api.status();
  api_ = *api;
  const uint64_t bs = spec_.block_size;
  order_ = BlockOrder(spec_.pattern, spec_.region_bytes / bs,
                      spec_.data_tag * 31 + index_);
  if (absl::Status s =
          CudaStatus(*api_, api_->cuMemAlloc(&region_, spec_.region_bytes),
                     "cuMemAlloc of the device region");
      !s.ok()) {
    return s;
  }
  if (spec_.op != Op::kWrite) return absl::OkStatus();
  // One block of data, stamped per block: the stamps are what the read
  // phase checks.
  std::unique_ptr<char[]> block(new char[bs]);
  FillBlockData(block.get(), bs, spec_.data_tag + index_);
  for (uint64_t b = 0; b < spec_.region_bytes / bs; ++b) {
    StampBlock(block.get(), bs, region_start_ + b * bs, spec_.data_tag);
    if (absl::Status s = CudaStatus(
            *api_, api_->cuMemcpyHtoD(region_ + b * bs, block.get(), bs),
            "filling the device region");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status GpuWorker::FinishRead(bool warm_cache) {
  const uint64_t bs = spec_.block_size;
  constexpr size_t kStamp = 16;
  char head[kStamp];
  char tail[kStamp];
  std::vector<char> both(2 * kStamp);
  for (uint64_t b = 0; b < spec_.region_bytes / bs; ++b) {
    const cuda::CUdeviceptr block = region_ + b * bs;
    if (absl::Status s = CudaStatus(
            *api_, api_->cuMemcpyDtoH(head, block, kStamp), "checking reads");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CudaStatus(
            *api_, api_->cuMemcpyDtoH(tail, block + bs - kStamp, kStamp),
            "checking reads");
        !s.ok()) {
      return s;
    }
    // CheckBlock looks at the first and last 16 bytes of a block.
    std::memcpy(both.data(), head, kStamp);
    std::memcpy(both.data() + kStamp, tail, kStamp);
    if (!CheckBlock(both.data(), both.size(), region_start_ + b * bs,
                    spec_.data_tag)) {
      return absl::DataLossError(absl::StrFormat(
          "%s: block at offset %d did not reach device memory intact",
          spec_.path, region_start_ + b * bs));
    }
  }
  warm_cache_ = warm_cache;
  return absl::OkStatus();
}

// Best effort: a failure leaves the next read colder, which its row shows.
void GpuWorker::WarmCache() const {
  const int fd = open(spec_.path.c_str(), O_RDONLY);
  if (fd < 0) return;
  const uint64_t bs = spec_.block_size;
  std::unique_ptr<char[]> buf(new char[bs]);
  for (uint64_t b = 0; b < spec_.region_bytes / bs; ++b) {
    if (pread(fd, buf.get(), bs, static_cast<off_t>(region_start_ + b * bs)) <
        0) {
      break;
    }
  }
  close(fd);
}

void GpuWorker::CountBlock(WorkerStats& stats, uint64_t start_ns) const {
  stats.latency.Record(MonotonicNanos() - start_ns);
  ++stats.ops;
  stats.bytes += spec_.block_size;
  if (spec_.progress != nullptr) spec_.progress->Add(spec_.block_size);
}

}  // namespace fgds::bench
