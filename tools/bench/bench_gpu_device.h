// File: tools/bench/bench_gpu_device.h
//
// What the GPU modes share: the CUDA driver (usrbio/cuda, device 0's
// primary context), and GpuWorker, the part of a worker that owns the
// device region, fills it for writes and checks it after reads.
#ifndef FGDS_TOOLS_BENCH_BENCH_GPU_DEVICE_H_
#define FGDS_TOOLS_BENCH_BENCH_GPU_DEVICE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/bench/block_order.h"
#include "tools/bench/mode.h"
#include "tools/bench/workers.h"
#include "usrbio/cuda/cuda_api.h"

namespace fgds::bench {

// BenchCuda loads CUDA and retains device 0's primary context (once per
// process, kept), and makes it current on the calling thread. Fails with
// the loader's reason on a host without a GPU.
absl::StatusOr<const cuda::CudaApi*> BenchCuda();

// CudaStatus turns a CUresult into a Status naming `what`.
absl::Status CudaStatus(const cuda::CudaApi& api, cuda::CUresult result,
                        absl::string_view what);

class GpuWorker : public PhaseWorker {
 public:
  GpuWorker(const PhaseSpec& spec, int index);
  ~GpuWorker() override;

 protected:
  // PrepareDevice binds the GPU, allocates the region and, for a write
  // phase, fills every block with data and its stamp. Call from Prepare.
  absl::Status PrepareDevice();
  // FinishRead checks every block's stamp in device memory. Untimed: call
  // after setting stats.io_done_ns/sync_done_ns. With `warm_cache`, the
  // destructor reads the worker's file region through the page cache: after
  // every worker has finished, so that it never competes with another
  // worker's timed reads for the disk.
  absl::Status FinishRead(bool warm_cache);

  uint64_t blocks() const { return order_.size(); }
  // The i-th block of the pass: its file offset and its device address.
  uint64_t FileOffset(uint64_t i) const {
    return region_start_ + order_[i] * spec_.block_size;
  }
  uint64_t DeviceAddress(uint64_t i) const {
    return region_ + order_[i] * spec_.block_size;
  }
  void CountBlock(WorkerStats& stats, uint64_t start_ns) const;

  const PhaseSpec& spec_;
  const int index_;
  const uint64_t region_start_;
  const cuda::CudaApi* api_ = nullptr;
  cuda::CUdeviceptr region_ = 0;
  BlockOrder order_;

 private:
  void WarmCache() const;
  bool warm_cache_ = false;
};

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BENCH_GPU_DEVICE_H_
