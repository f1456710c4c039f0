// The hf3fs iov calls on usrbio iovs: host iovs are usrbio memfd iovs,
// GPU iovs are usrbio GPU iovs (fgds_iov_wrap_gpu). Nothing is published
// under a name (3FS symlinks a /dev/shm file into the mount): an iov is
// this process's, so opening another process's iov by id is not supported,
// and hf3fs_iovwrap adopts memory of an iov this process created.
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "dropin/hf3fs/gpu_memory.h"
#include "dropin/hf3fs/handles.h"
#include "dropin/hf3fs/include/hf3fs_usrbio.h"
#include "dropin/hf3fs/mounts.h"

namespace fgds::hf3fs {
namespace {

// Iovs this process created, by id, for hf3fs_iovwrap.
struct IovTable {
  std::mutex mu;
  std::map<std::string, IovHandle*> by_id;
};

IovTable& Iovs() {
  static IovTable* table = new IovTable();  // never destroyed
  return *table;
}

std::string IdKey(const void* id) {
  return std::string(static_cast<const char*>(id), 16);
}

// Fills the parts of `iov` every create call sets.
void Describe(hf3fs_iov* iov, IovHandle* handle, const char* mount_point,
              size_t block_size, int numa) {
  iov->base = static_cast<uint8_t*>(handle->target->base);
  iov->iovh = handle;
  iov->size = handle->target->size;
  iov->block_size = block_size;
  iov->numa = numa;
  std::snprintf(iov->mount_point, sizeof(iov->mount_point), "%s", mount_point);
}

void Publish(hf3fs_iov* iov, IovHandle* handle) {
  if (getrandom(iov->id, sizeof(iov->id), 0) != sizeof(iov->id)) {
    // Unique within the process is all the id needs to be here.
    static std::atomic<uint64_t> counter{1};
    std::memset(iov->id, 0, sizeof(iov->id));
    const uint64_t n = counter.fetch_add(1);
    std::memcpy(iov->id, &n, sizeof(n));
  }
  IovTable& table = Iovs();
  std::lock_guard<std::mutex> lock(table.mu);
  table.by_id[IdKey(iov->id)] = handle;
}

int CheckCreate(const hf3fs_iov* iov, const char* mount_point, size_t size) {
  if (iov == nullptr || mount_point == nullptr || size == 0 ||
      std::strlen(mount_point) >= sizeof(iov->mount_point)) {
    return -EINVAL;
  }
  return 0;
}

}  // namespace
}  // namespace fgds::hf3fs

using fgds::hf3fs::IovHandle;

extern "C" {

int hf3fs_iovcreate(struct hf3fs_iov* iov, const char* hf3fs_mount_point,
                    size_t size, size_t block_size, int numa) {
  if (int error = fgds::hf3fs::CheckCreate(iov, hf3fs_mount_point, size);
      error != 0) {
    return error;
  }
  int error = 0;
  auto* handle = new IovHandle();
  handle->session = fgds::hf3fs::AcquireSession(hf3fs_mount_point, &error);
  if (handle->session == nullptr) {
    delete handle;
    return error;
  }
  fgds_iov_params params = {};
  params.size = size;
  params.numa_node = numa < 0 ? -1 : numa;
  error = fgds_iov_create(handle->session, &handle->own, &params);
  if (error != 0) {
    fgds::hf3fs::ReleaseSession(handle->session);
    delete handle;
    return error;
  }
  handle->target = &handle->own;
  handle->owner = true;
  fgds::hf3fs::Describe(iov, handle, hf3fs_mount_point, block_size, numa);
  iov->size = size;  // usrbio rounds up to pages; the caller asked for size
  fgds::hf3fs::Publish(iov, handle);
  return 0;
}

int hf3fs_iovopen(struct hf3fs_iov* iov, const uint8_t id[16],
                  const char* hf3fs_mount_point, size_t size, size_t block_size,
                  int numa) {
  (void)iov, (void)id, (void)hf3fs_mount_point, (void)size, (void)block_size,
      (void)numa;
  // Another process's iov: FGDS shares iov memory with the daemon over the
  // session's socket, never under a name another process could open.
  return -EOPNOTSUPP;
}

int hf3fs_iovwrap(struct hf3fs_iov* iov, void* base, const uint8_t id[16],
                  const char* hf3fs_mount_point, size_t size, size_t block_size,
                  int numa) {
  if (int error = fgds::hf3fs::CheckCreate(iov, hf3fs_mount_point, size);
      error != 0) {
    return error;
  }
  if (id == nullptr || base == nullptr) return -EINVAL;
  IovHandle* original = nullptr;
  {
    auto& table = fgds::hf3fs::Iovs();
    std::lock_guard<std::mutex> lock(table.mu);
    auto it = table.by_id.find(fgds::hf3fs::IdKey(id));
    if (it != table.by_id.end()) original = it->second;
  }
  if (original == nullptr) return -ENOENT;
  const auto* start = static_cast<const uint8_t*>(original->target->base);
  const auto* at = static_cast<const uint8_t*>(base);
  if (at < start || size > original->target->size ||
      static_cast<size_t>(at - start) > original->target->size - size) {
    return -EINVAL;
  }
  int error = 0;
  auto* handle = new IovHandle();
  handle->session = fgds::hf3fs::AcquireSession(hf3fs_mount_point, &error);
  if (handle->session == nullptr) {
    delete handle;
    return error;
  }
  if (handle->session != original->session) {
    fgds::hf3fs::ReleaseSession(handle->session);
    delete handle;
    return -EXDEV;  // the memory belongs to another mount's iov
  }
  handle->target = original->target;
  handle->device = original->device;
  fgds::hf3fs::Describe(iov, handle, hf3fs_mount_point, block_size, numa);
  iov->base = static_cast<uint8_t*>(base);
  iov->size = size;
  std::memcpy(iov->id, id, sizeof(iov->id));
  return 0;
}

void hf3fs_iovunlink(struct hf3fs_iov* iov) {
  // Nothing is published under a name, so there is nothing to unlink; the
  // id stops naming the iov for hf3fs_iovwrap, as 3FS's unlink stops
  // hf3fs_iovopen.
  if (iov == nullptr) return;
  auto& table = fgds::hf3fs::Iovs();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.by_id.find(fgds::hf3fs::IdKey(iov->id));
  if (it != table.by_id.end() && it->second == iov->iovh) table.by_id.erase(it);
}

void hf3fs_iovdestroy(struct hf3fs_iov* iov) {
  if (iov == nullptr || iov->iovh == nullptr) return;
  auto* handle = static_cast<IovHandle*>(iov->iovh);
  hf3fs_iovunlink(iov);
  if (handle->owner) fgds_iov_destroy(&handle->own);
  if (handle->device_alloc != 0) {
    fgds::hf3fs::FreeDeviceMemory(handle->device, handle->device_alloc);
  }
  fgds::hf3fs::ReleaseSession(handle->session);
  delete handle;
  iov->iovh = nullptr;
  iov->base = nullptr;
}

}  // extern "C"
