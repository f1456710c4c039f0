// File: usrbio/gpu/gpu_iov.h
//
// The state behind a GPU iov (fgds_iov.gpu, made by fgds_iov_wrap_gpu): the
// device range, the GPU operations (direct::DeviceOps: CUDA, or host memory
// in tests), the staging memory (an ordinary usrbio host iov, page-locked
// for the GPU) cut into slots of chunk_bytes, the library's stream, one
// event per slot, and the daemon's answer to the range's dma-buf: DIRECT
// (an iov id of its own, mapped through the fgds module) or BOUNCE and why.
//
// WrapGpuIov is the internal entry point: tests hand it a FakeDeviceOps to
// run the whole pipeline against a real daemon without a GPU.
//
// Thread safety: the slots are used only by the ior that owns the iov
// (Acquire/Release, under owner_mu) and under that ior's stager lock.
// Entries that need no slot and never bounce (a mapped DIRECT iov's,
// MappedEntry) take no ownership: any number of iors use the iov at once.
#ifndef FGDS_USRBIO_GPU_GPU_IOV_H_
#define FGDS_USRBIO_GPU_GPU_IOV_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fgds/usrbio.h"
#include "usrbio/direct/device_ops.h"

namespace fgds::cuda {
struct CudaApi;
}

namespace fgds::usrbio::gpu {

struct Request;

// One staging slot and the chunk using it (at most one at a time).
struct Slot {
  enum class State { kFree, kReadIo, kCopy, kWriteWait, kWriteIo };
  uint64_t staging_offset = 0;  // in the staging iov, chunk_bytes aligned
  uintptr_t event = 0;
  State state = State::kFree;
  Request* request = nullptr;
  uint64_t offset = 0;  // of the chunk, in the request
  uint64_t len = 0;
  int64_t result = 0;    // the daemon's, for reads
  Slot* next = nullptr;  // in the stager's copy or write-wait FIFO
};

struct GpuIov {
  GpuIov() = default;
  GpuIov(const GpuIov&) = delete;
  GpuIov& operator=(const GpuIov&) = delete;

  std::unique_ptr<direct::DeviceOps> owned_ops;
  direct::DeviceOps* ops = nullptr;
  // The CUDA driver when ops is CUDA (host registration and making the
  // context current); null with injected ops.
  const cuda::CudaApi* api = nullptr;

  uint64_t dev_base = 0;
  uint64_t size = 0;
  uint64_t buffer_id = 0;  // of the allocation at wrap time

  // Set once by Wrap, read-only afterwards. direct: the daemon has its own
  // way to the range (iov direct_id); aligned entries go there
  // (DirectEntry). nic_only: which way (the reply's reason,
  // FGDS_IOV_GPU_DIRECT_NIC_ONLY): the daemon mapped nothing and keeps the
  // dma-buf for a NIC, so an entry may come back "bounce this entry" and
  // goes through the stager, which re-issues it on the staging. Without
  // it the daemon mapped the memory (fgds module): entries never bounce
  // and go to the ring as ordinary ones (fgds_prep_io), from any ior.
  bool direct = false;
  bool nic_only = false;
  uint32_t direct_id = 0;
  // Bytes from dev_base that the daemon mapped: all of `size`, or less when
  // the allocation ends inside a page (only whole pages can be exported);
  // entries past it bounce.
  uint64_t direct_size = 0;
  uint32_t reason = FGDS_IOV_GPU_REASON_NO_DMABUF;  // NONE when direct
  // The daemon answered an entry FGDS_PATH_BOUNCE_ALWAYS: its direct way
  // will never move bytes (the NIC refused the dma-buf), so every later
  // entry bounces. Set by the reaping thread (the stager), read by the
  // submitting one (DirectEntry) and by the stager again before a direct
  // try, so entries prepared before the answer skip the try too.
  std::atomic<bool> direct_failed{false};

  fgds_iov staging = {};
  bool staging_pinned = false;
  uint64_t chunk_bytes = 0;
  uintptr_t stream = 0;
  bool has_stream = false;
  std::vector<Slot> slots;
  std::vector<uint32_t> free_slots;  // under the owner's stager lock

  std::mutex owner_mu;
  const void* owner = nullptr;  // the ior using it; guarded by owner_mu
  uint64_t owner_requests = 0;  // its requests here; guarded by owner_mu

  // Acquire makes `ior` the iov's user for one more request: false when
  // another ior uses it. Release ends one request.
  bool Acquire(const void* ior);
  void Release();
};

// ScopedDevice makes a GPU iov's CUDA context current on the calling thread
// (no-op for injected ops) until the end of the scope, then restores the
// thread's own: the application's notion of "current" never changes.
class ScopedDevice {
 public:
  ScopedDevice() = default;
  explicit ScopedDevice(GpuIov* iov) { Use(iov); }
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

  // Use binds `iov`'s context, unless the one bound already serves it.
  void Use(GpuIov* iov);

 private:
  const cuda::CudaApi* api_ = nullptr;  // set once something was bound
  void* previous_ = nullptr;
  direct::DeviceOps* bound_ = nullptr;
};

// The chunk and staging sizes a GPU iov made with `params` has: the
// defaults for zeros, the staging rounded up to whole chunks.
struct StagingShape {
  uint64_t chunk_bytes;
  uint64_t staging_bytes;
};
inline StagingShape ResolveStagingShape(const fgds_iov_gpu_params& params) {
  const uint64_t chunk =
      params.chunk_bytes != 0 ? params.chunk_bytes : FGDS_IOV_GPU_DEFAULT_CHUNK;
  const uint64_t staging = params.staging_bytes != 0
                               ? params.staging_bytes
                               : FGDS_IOV_GPU_DEFAULT_STAGING;
  return {chunk, (staging + chunk - 1) / chunk * chunk};
}

// WrapGpuIov is fgds_iov_wrap_gpu on `ops` (not owned: the caller keeps
// it alive until fgds_iov_destroy), e.g. a FakeDeviceOps in tests.
int WrapGpuIov(fgds_session* session, fgds_iov* iov, uint64_t dev_ptr,
               uint64_t size, const fgds_iov_gpu_params* params,
               direct::DeviceOps* ops);

// GpuPath is fgds_iov_gpu_path.
int GpuPath(const fgds_iov* iov, uint32_t* reason);

// DestroyGpuIov releases what WrapGpuIov made; returns the unregistration
// result.
int DestroyGpuIov(fgds_iov* iov);

inline GpuIov* GpuOf(const fgds_iov* iov) {
  return static_cast<GpuIov*>(iov->gpu);
}

// DirectEntry: whether an entry on `g` at device address `dev` can skip
// the staging and go to the daemon on g->direct_id (on a NIC-only iov
// still through the stager, which re-issues it through the staging if the
// daemon answers "bounce this entry", FGDS_PATH_BOUNCE_ENTRY; on a mapped
// one straight to the ring, MappedEntry): the daemon said DIRECT
// and has not said since that the iov never moves directly,
// the entry lies inside the mapped part, and it can go O_DIRECT (what the
// daemon demands of GPU memory, fusefs/session/sqe_check.h): 4096-aligned
// address, offset and length, not buffered. The address stands for the buffer's
// place in the daemon's mapping, which is congruent to it modulo the page size.
inline bool DirectEntry(const GpuIov* g, uint64_t dev, uint64_t file_offset,
                        uint64_t len, uint32_t sqe_flags, uint32_t ior_flags) {
  constexpr uint64_t kDirectAlign = 4096;
  // The daemon's limit on one entry; the stager splits longer ones.
  constexpr uint64_t kMaxDirectLen = uint64_t{1} << 30;
  return g->direct && !g->direct_failed.load(std::memory_order_relaxed) &&
         dev >= g->dev_base && len <= g->direct_size &&
         dev - g->dev_base <= g->direct_size - len &&
         ((dev | file_offset | len) % kDirectAlign) == 0 &&
         len <= kMaxDirectLen && (sqe_flags & FGDS_SQE_BUFFERED) == 0 &&
         (ior_flags & FGDS_IOR_BUFFERED) == 0;
}

// MappedEntry: a DirectEntry of an iov the daemon mapped (not NIC-only):
// it can never bounce, so fgds_prep_io sends it to the ring as an ordinary
// entry on g->direct_id, without the stager (no lock, no allocation, no
// ownership of the iov), as a host iov's. Its completion goes to the
// caller as the daemon wrote it (a "bounce this entry" path there is the
// daemon's error: RejectStrayBounce).
inline bool MappedEntry(const GpuIov* g, uint64_t dev, uint64_t file_offset,
                        uint64_t len, uint32_t sqe_flags, uint32_t ior_flags) {
  return !g->nic_only &&
         DirectEntry(g, dev, file_offset, len, sqe_flags, ior_flags);
}

}  // namespace fgds::usrbio::gpu

#endif  // FGDS_USRBIO_GPU_GPU_IOV_H_
