// GPU iovs: wrapping a device range, its staging memory, stream and events.
#include "usrbio/gpu/gpu_iov.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_error.h"
#include "usrbio/cuda/cuda_types.h"
#include "usrbio/direct/cuda_device_ops.h"
#include "usrbio/gpu/request_result.h"
#include "usrbio/internal.h"

namespace fgds::usrbio::gpu {
namespace {

bool ParamsValid(const fgds_iov_gpu_params& p) {
  for (uint64_t r : p.reserved) {
    if (r != 0) return false;
  }
  return p.reserved0 == 0 && (p.flags & ~FGDS_IOV_GPU_VALID_FLAGS) == 0 &&
         p.chunk_bytes % kAlign == 0 &&
         p.chunk_bytes <= FGDS_IOV_GPU_MAX_CHUNK &&
         p.staging_bytes <= FGDS_IOV_GPU_MAX_STAGING && p.device >= 0;
}

// CheckGpuParams applies the defaults of a NULL params and checks them.
int CheckGpuParams(const fgds_iov_gpu_params* params, uint64_t size,
                   fgds_iov_gpu_params* out) {
  fgds_iov_gpu_params p = {};
  if (params != nullptr) p = *params;
  if (!ParamsValid(p) || size == 0) return -EINVAL;
  *out = p;
  return 0;
}

// Frees what a partly made GpuIov holds, in reverse order of making.
int Teardown(GpuIov* g) {
  int ret = 0;
  if (g->direct) {
    // First: the daemon's mapping of the GPU memory outlives this call only
    // while its own in-flight I/O drains.
    ret = Unregister(g->staging.session, FGDS_MSG_IOV_UNREGISTER, g->direct_id);
  }
  {
    ScopedDevice scope(g);
    for (Slot& slot : g->slots) {
      if (slot.event != 0) g->ops->DestroyEvent(slot.event);
    }
    if (g->has_stream) g->ops->DestroyStream(g->stream);
    if (g->staging_pinned) g->api->cuMemHostUnregister(g->staging.base);
  }
  if (g->staging.session != nullptr) {
    const int staging = fgds_iov_destroy(&g->staging);
    if (ret == 0) ret = staging;
  }
  delete g;  // owned_ops last: it may hold the primary context
  return ret;
}

// OfferDmaBuf exports the range as a dma-buf and offers it to the daemon
// for the direct path, recording its answer in g. 0 whatever the answer
// (the bounce path is always there); -errno only when the session itself
// failed (-ENOTCONN, -EPIPE, -EPROTO), which dooms the bounce path too.
// REQUIRES: g's context current (ScopedDevice).
int OfferDmaBuf(fgds_session* session, GpuIov* g) {
  const direct::DeviceDescription device = g->ops->Describe();
  fgds_msg_gpu_iov_register msg = {};
  // Room for the NUL: a longer id cannot be a PCI address the daemon knows.
  if (!device.dmabuf_supported || device.pci_bus_id.empty() ||
      device.pci_bus_id.size() >= sizeof(msg.pci_bus_id)) {
    g->reason = FGDS_IOV_GPU_REASON_NO_DMABUF;
    return 0;
  }
  direct::DmaBufExport exported;
  std::string message;
  uint64_t direct_size = g->size;
  if (g->ops->ExportDmaBuf(g->dev_base, direct_size, &exported, &message) !=
      0) {
    // Only whole pages export. An allocation whose size is not a multiple
    // of the page (cudaMalloc(50000000)) can still go direct up to its
    // last whole page; the tail bounces.
    direct::AllocationInfo info;
    const uint64_t page_end = g->ops->Resolve(g->dev_base, &info, &message) == 0
                                  ? (info.base + info.size) & ~uint64_t{4095}
                                  : 0;
    if (page_end <= g->dev_base || page_end >= g->dev_base + g->size) {
      g->reason = FGDS_IOV_GPU_REASON_NO_DMABUF;
      return 0;
    }
    direct_size = page_end - g->dev_base;
    if (g->ops->ExportDmaBuf(g->dev_base, direct_size, &exported, &message) !=
        0) {
      g->reason = FGDS_IOV_GPU_REASON_NO_DMABUF;
      return 0;
    }
  }
  msg.size = direct_size;
  msg.dmabuf_offset = exported.offset;
  msg.dmabuf_size = exported.size;
  memcpy(msg.pci_bus_id, device.pci_bus_id.data(), device.pci_bus_id.size());
  fgds_msg_reply reply = {};
  const int ret = ExchangeReply(session, FGDS_MSG_GPU_IOV_REGISTER, &msg,
                                sizeof(msg), &exported.fd, 1, &reply);
  // The daemon holds its own reference (or none): ours goes now.
  close(exported.fd);
  if (ret == -ENOTCONN || ret == -EPIPE || ret == -EPROTO) return ret;
  if (ret != 0) {
    g->reason = FGDS_IOV_GPU_REASON_REFUSED;
  } else if (reply.path == FGDS_PATH_DIRECT) {
    g->direct = true;
    // 0: mapped, its entries never bounce (all a daemon before
    // FGDS_IOV_GPU_DIRECT_NIC_ONLY ever answered DIRECT for). Any other
    // value, known or not, may bounce: the stager serves both kinds, the
    // ring alone only the first.
    g->nic_only = reply.reason != FGDS_IOV_GPU_REASON_NONE;
    g->direct_id = reply.id;
    g->direct_size = direct_size;
    g->reason = FGDS_IOV_GPU_REASON_NONE;
  } else if (reply.path == FGDS_PATH_BOUNCE && reply.reason != 0 &&
             reply.reason <= FGDS_IOV_GPU_REASON_MAX) {
    g->reason = reply.reason;
  } else {
    return -EPROTO;  // no daemon of this protocol answers that
  }
  return 0;
}

// TagStaging tells the daemon which GPU `g`'s staging iov serves, so that
// `fgds stat` counts its bytes for that GPU, where the daemon understands
// the message (its HELLO reply's features say so: the features are asked
// again here because fgds_session has no field for them). Accounting only:
// 0 whatever the daemon answers, -errno only when the session itself
// failed (-ENOTCONN, -EPIPE, -EPROTO).
int TagStaging(fgds_session* session, GpuIov* g) {
  const direct::DeviceDescription device = g->ops->Describe();
  fgds_msg_iov_gpu_staging msg = {};
  if (device.pci_bus_id.empty() ||
      device.pci_bus_id.size() >= sizeof(msg.pci_bus_id)) {
    return 0;
  }
  fgds_msg_hello hello = {};
  fgds_msg_reply reply = {};
  int ret = ExchangeReply(session, FGDS_MSG_HELLO, &hello, sizeof(hello),
                          nullptr, 0, &reply);
  if (ret == 0 && (reply.path & FGDS_FEATURE_IOV_GPU_STAGING) != 0) {
    msg.iov_id = g->staging.id;
    memcpy(msg.pci_bus_id, device.pci_bus_id.data(), device.pci_bus_id.size());
    ret = ExchangeReply(session, FGDS_MSG_IOV_GPU_STAGING, &msg, sizeof(msg),
                        nullptr, 0, &reply);
  }
  return ret == -ENOTCONN || ret == -EPIPE || ret == -EPROTO ? ret : 0;
}

int Wrap(fgds_session* session, fgds_iov* iov, uint64_t dev_ptr, uint64_t size,
         const fgds_iov_gpu_params& params,
         std::unique_ptr<direct::DeviceOps> owned, direct::DeviceOps* ops,
         const cuda::CudaApi* api) {
  direct::AllocationInfo info;
  std::string message;
  if (int ret = ops->Resolve(dev_ptr, &info, &message); ret != 0) return ret;
  // Overflow-safe "[dev_ptr, dev_ptr + size) inside the allocation".
  if (dev_ptr < info.base || dev_ptr - info.base > info.size ||
      size > info.size - (dev_ptr - info.base)) {
    return -EINVAL;
  }
  const auto [chunk, staging] = ResolveStagingShape(params);

  auto* g = new (std::nothrow) GpuIov;
  if (g == nullptr) return -ENOMEM;
  g->owned_ops = std::move(owned);
  g->ops = ops;
  g->api = api;
  g->dev_base = dev_ptr;
  g->size = size;
  g->buffer_id = info.buffer_id;
  g->chunk_bytes = chunk;
  int ret = 0;
  try {
    g->slots.resize(staging / chunk);
    g->free_slots.reserve(g->slots.size());
  } catch (const std::bad_alloc&) {
    Teardown(g);
    return -ENOMEM;
  }
  fgds_iov_params ip = {};
  ip.size = staging;
  // Staging on the GPU's NUMA node: the device's DMA and the daemon's
  // page-cache copies then stay on the GPU's socket.
  ip.numa_node = ops->Describe().numa_node;
  ret = fgds_iov_create(session, &g->staging, &ip);
  if (ret != 0 && ip.numa_node >= 0) {
    // mbind refused (a seccomp profile without CAP_SYS_NICE, say): the
    // placement is a preference, the iov is not.
    ip.numa_node = -1;
    ret = fgds_iov_create(session, &g->staging, &ip);
  }
  if (ret != 0) {
    g->staging.session = nullptr;
    Teardown(g);
    return ret;
  }
  {
    ScopedDevice scope(g);
    if (api != nullptr) {
      // Page-locks the memfd pages the daemon reads into, so the device
      // copies DMA straight from them (no driver-side bounce). Portable:
      // usable from every context.
      const cuda::CUresult result = api->cuMemHostRegister(
          g->staging.base, staging, cuda::kMemHostRegisterPortable);
      if (result != cuda::kCudaSuccess) ret = -cuda::CuResultToErrno(result);
      g->staging_pinned = ret == 0;
    }
    if (ret == 0) {
      ret = ops->CreateStream(&g->stream);
      g->has_stream = ret == 0;
    }
    for (size_t i = 0; ret == 0 && i < g->slots.size(); ++i) {
      g->slots[i].staging_offset = i * chunk;
      ret = ops->CreateEvent(&g->slots[i].event);
      if (ret != 0) g->slots[i].event = 0;
    }
    if (ret == 0) ret = TagStaging(session, g);
    if (ret == 0) ret = OfferDmaBuf(session, g);
  }
  if (ret != 0) {
    Teardown(g);
    return ret;
  }
  for (size_t i = g->slots.size(); i > 0; --i) {
    g->free_slots.push_back(static_cast<uint32_t>(i - 1));
  }
  iov->base = reinterpret_cast<void*>(dev_ptr);
  iov->size = size;
  iov->id = g->staging.id;
  iov->memfd = g->staging.memfd;
  iov->session = session;
  iov->gpu = g;
  return 0;
}

}  // namespace

bool GpuIov::Acquire(const void* ior) {
  std::lock_guard<std::mutex> lock(owner_mu);
  if (owner != nullptr && owner != ior) return false;
  owner = ior;
  ++owner_requests;
  return true;
}

void GpuIov::Release() {
  std::lock_guard<std::mutex> lock(owner_mu);
  if (--owner_requests == 0) owner = nullptr;
}

void ScopedDevice::Use(GpuIov* iov) {
  if (iov->api == nullptr || iov->ops == bound_) return;
  if (api_ == nullptr) {
    cuda::CUcontext previous = nullptr;
    if (iov->api->cuCtxGetCurrent(&previous) != cuda::kCudaSuccess) {
      previous = nullptr;
    }
    previous_ = previous;
    api_ = iov->api;
  }
  // BindThread makes the ops' context current.
  if (iov->ops->BindThread() == 0) bound_ = iov->ops;
}

ScopedDevice::~ScopedDevice() {
  if (api_ != nullptr) {
    api_->cuCtxSetCurrent(static_cast<cuda::CUcontext>(previous_));
  }
}

int WrapGpuIov(fgds_session* session, fgds_iov* iov, uint64_t dev_ptr,
               uint64_t size, const fgds_iov_gpu_params* params,
               direct::DeviceOps* ops) {
  ErrnoSaver saver;
  if (session == nullptr || iov == nullptr || ops == nullptr || dev_ptr == 0) {
    return -EINVAL;
  }
  fgds_iov_gpu_params p;
  if (int ret = CheckGpuParams(params, size, &p); ret != 0) return ret;
  try {
    return Wrap(session, iov, dev_ptr, size, p, nullptr, ops, nullptr);
  } catch (...) {
    return -ENOMEM;
  }
}

int GpuPath(const fgds_iov* iov, uint32_t* reason) {
  if (iov == nullptr || iov->gpu == nullptr) return -EINVAL;
  const GpuIov* g = GpuOf(iov);
  // The daemon's "bounce, for good" answer (the NIC refused the dma-buf)
  // turned a DIRECT iov into a bouncing one.
  const bool failed = g->direct_failed.load(std::memory_order_relaxed);
  if (reason != nullptr) {
    *reason = failed ? FGDS_IOV_GPU_REASON_MAP_FAILED : g->reason;
  }
  return static_cast<int>(g->direct && !failed ? FGDS_PATH_DIRECT
                                               : FGDS_PATH_BOUNCE);
}

int DestroyGpuIov(fgds_iov* iov) {
  int ret = Teardown(GpuOf(iov));
  iov->gpu = nullptr;
  iov->base = nullptr;
  iov->memfd = -1;
  iov->session = nullptr;
  return ret;
}

}  // namespace fgds::usrbio::gpu

using fgds::usrbio::ErrnoSaver;

extern "C" int fgds_iov_wrap_gpu(
    struct fgds_session* session, struct fgds_iov* iov, uint64_t dev_ptr,
    uint64_t size, const struct fgds_iov_gpu_params* params) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || iov == nullptr || dev_ptr == 0) return -EINVAL;
  fgds_iov_gpu_params p;
  if (int ret = fgds::usrbio::gpu::CheckGpuParams(params, size, &p); ret != 0) {
    return ret;
  }
  try {
    std::unique_ptr<fgds::direct::DeviceOps> ops;
    std::string message;
    // The buffer's device decides, not the thread's current context: a
    // process driving several GPUs wraps buffers of each from any thread.
    int ret = fgds::direct::MakeCudaDeviceOpsForBuffer(
        dev_ptr, (p.flags & FGDS_IOV_GPU_PRIMARY_CTX) != 0, p.device, &ops,
        &message);
    if (ret != 0) return ret;
    fgds::direct::DeviceOps* raw = ops.get();
    return fgds::usrbio::gpu::Wrap(session, iov, dev_ptr, size, p,
                                   std::move(ops), raw, fgds::cuda::Cuda().api);
  } catch (...) {
    return -ENOMEM;
  }
}

extern "C" int fgds_iov_gpu_path(const struct fgds_iov* iov,
                                 uint32_t* reason) noexcept {
  ErrnoSaver saver;
  return fgds::usrbio::gpu::GpuPath(iov, reason);
}
