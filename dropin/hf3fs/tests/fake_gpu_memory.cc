// The hf3fs drop-in's GPU side (gpu_memory.h) on fake device memory
// (usrbio/direct/fake_device_ops.h), for libhf3fs_api_shared_fakegpu.so:
// the GPU-iov calls, usrbio's bounce pipeline and a real daemon run on
// machines without a GPU. One fake device (ordinal 0).
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "dropin/hf3fs/gpu_memory.h"
#include "dropin/hf3fs/tests/fake_gpu.h"
#include "usrbio/direct/fake_device_ops.h"
#include "usrbio/gpu/gpu_iov.h"

namespace fgds::hf3fs {
namespace {

// Shared by every iov; GPU iovs borrow it (WrapGpuIov does not own it).
direct::FakeDeviceOps& Device() {
  static auto* device = new direct::FakeDeviceOps();  // never destroyed
  return *device;
}

std::atomic<long> syncs{0};

}  // namespace

int DeviceCount() { return 1; }

int AllocDeviceMemory(int device, size_t size, uint64_t* address) {
  if (device != 0) return -EINVAL;
  *address = Device().Alloc(size);
  return 0;
}

void FreeDeviceMemory(int device, uint64_t address) {
  (void)device;
  Device().Free(address);
}

int WrapDeviceMemory(fgds_session* session, fgds_iov* iov, uint64_t address,
                     uint64_t size, int device) {
  if (device != 0) return -ENODEV;
  return usrbio::gpu::WrapGpuIov(session, iov, address, size, nullptr,
                                 &Device());
}

int SynchronizeDevice(int device) {
  if (device != 0) return -EINVAL;
  // The fake's copies finish inside their calls: nothing is queued.
  syncs.fetch_add(1);
  return 0;
}

}  // namespace fgds::hf3fs

extern "C" {

void* fgds_fake_gpu_alloc(size_t bytes) {
  return reinterpret_cast<void*>(fgds::hf3fs::Device().Alloc(bytes));
}

void fgds_fake_gpu_free(void* ptr) {
  fgds::hf3fs::Device().Free(reinterpret_cast<uint64_t>(ptr));
}

long fgds_fake_gpu_syncs(void) { return fgds::hf3fs::syncs.load(); }

}  // extern "C"
