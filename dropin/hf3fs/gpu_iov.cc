// The GPU-iov calls of 3FS's GDR proposal on usrbio GPU iovs
// (fgds_iov_wrap_gpu): the daemon maps the memory for the direct path
// where the fgds kernel module allows, else the library bounces it through
// pinned staging; either way a read's completion means the bytes are in
// GPU memory, visible to any later GPU work.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dropin/hf3fs/gpu_memory.h"
#include "dropin/hf3fs/handles.h"
#include "dropin/hf3fs/include/hf3fs_usrbio.h"
#include "dropin/hf3fs/mounts.h"

namespace fgds::hf3fs {
namespace {

// WrapDevice makes `iov` a GPU iov of `size` bytes at `address` on device
// `device`; `allocated` is memory the iov frees at destroy (0 for none).
int WrapDevice(hf3fs_iov* iov, uint64_t address, uint64_t allocated,
               const char* mount_point, size_t size, size_t block_size,
               int device) {
  if (iov == nullptr || mount_point == nullptr || size == 0 ||
      std::strlen(mount_point) >= sizeof(iov->mount_point)) {
    return -EINVAL;
  }
  // 3FS's GDR iovs take no block partitioning either.
  if (block_size != 0) return -EINVAL;
  if (DeviceCount() == 0) return -ENOTSUP;
  int error = 0;
  auto* handle = new IovHandle();
  handle->session = AcquireSession(mount_point, &error);
  if (handle->session == nullptr) {
    delete handle;
    return error;
  }
  error =
      WrapDeviceMemory(handle->session, &handle->own, address, size, device);
  if (error != 0) {
    ReleaseSession(handle->session);
    delete handle;
    return error == -ENODEV ? -ENOTSUP : error;
  }
  handle->target = &handle->own;
  handle->owner = true;
  handle->device = device;
  handle->device_alloc = allocated;
  iov->base = reinterpret_cast<uint8_t*>(address);
  iov->iovh = handle;
  iov->size = size;
  iov->block_size = 0;
  iov->numa = -1;
  std::snprintf(iov->mount_point, sizeof(iov->mount_point), "%s", mount_point);
  return 0;
}

}  // namespace
}  // namespace fgds::hf3fs

using fgds::hf3fs::IovHandle;

extern "C" {

int hf3fs_iovcreate_device(struct hf3fs_iov* iov, const char* hf3fs_mount_point,
                           size_t size, size_t block_size, int device_id) {
  if (iov == nullptr || size == 0 || block_size != 0) return -EINVAL;
  uint64_t address = 0;
  if (int error = fgds::hf3fs::AllocDeviceMemory(device_id, size, &address);
      error != 0) {
    return error;
  }
  const int error = fgds::hf3fs::WrapDevice(
      iov, address, address, hf3fs_mount_point, size, block_size, device_id);
  if (error != 0) fgds::hf3fs::FreeDeviceMemory(device_id, address);
  if (error == 0) std::memset(iov->id, 0, sizeof(iov->id));
  return error;
}

int hf3fs_iovopen_device(struct hf3fs_iov* iov, const uint8_t id[16],
                         const char* hf3fs_mount_point, size_t size,
                         size_t block_size, int device_id) {
  (void)iov, (void)id, (void)hf3fs_mount_point, (void)size, (void)block_size,
      (void)device_id;
  // 3FS imports another process's GPU memory by CUDA IPC; FGDS iovs are
  // the creating process's own (docs/dropin.md).
  return -ENOTSUP;
}

int hf3fs_iovwrap_device(struct hf3fs_iov* iov, void* device_ptr,
                         const uint8_t id[16], const char* hf3fs_mount_point,
                         size_t size, size_t block_size, int device_id) {
  if (device_ptr == nullptr) return -EINVAL;
  const int error =
      fgds::hf3fs::WrapDevice(iov, reinterpret_cast<uint64_t>(device_ptr), 0,
                              hf3fs_mount_point, size, block_size, device_id);
  if (error == 0) {
    if (id != nullptr) {
      std::memcpy(iov->id, id, sizeof(iov->id));
    } else {
      std::memset(iov->id, 0, sizeof(iov->id));
    }
  }
  return error;
}

bool hf3fs_gdr_available(void) { return fgds::hf3fs::DeviceCount() > 0; }

int hf3fs_gdr_device_count(void) { return fgds::hf3fs::DeviceCount(); }

enum hf3fs_mem_type hf3fs_iov_mem_type(const struct hf3fs_iov* iov) {
  if (iov == nullptr || iov->iovh == nullptr) return HF3FS_MEM_HOST;
  const auto* handle = static_cast<const IovHandle*>(iov->iovh);
  return handle->device >= 0 ? HF3FS_MEM_DEVICE : HF3FS_MEM_HOST;
}

int hf3fs_iov_device_id(const struct hf3fs_iov* iov) {
  if (iov == nullptr || iov->iovh == nullptr) return -1;
  return static_cast<const IovHandle*>(iov->iovh)->device;
}

int hf3fs_iovsync(const struct hf3fs_iov* iov, int direction) {
  if (iov == nullptr || iov->iovh == nullptr) return -EINVAL;
  (void)direction;  // 3FS: 0 before a write, 1 after a read; one fence
  const auto* handle = static_cast<const IovHandle*>(iov->iovh);
  if (handle->device < 0) return 0;  // host memory: nothing to order
  // What 3FS does (cudaSetDevice + cudaDeviceSynchronize), and what a 3FS
  // program relies on: the bounce path copies on a stream of its own that
  // does not wait for the application's streams, so a kernel still
  // writing the buffer (a source about to be written to a file, or a
  // fill racing a read into it) must finish first. Completed reads need
  // no fence: usrbio reports one only after its device copy finished.
  return fgds::hf3fs::SynchronizeDevice(handle->device);
}

}  // extern "C"
