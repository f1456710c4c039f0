// The hf3fs ring calls on usrbio iors. 3FS's ring direction (for_read),
// io_depth and timeout map onto fgds_ior_params; its cqe's `index` is a
// slot this file keeps per ring, holding the caller's userdata.
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "dropin/hf3fs/handles.h"
#include "dropin/hf3fs/include/hf3fs_usrbio.h"
#include "dropin/hf3fs/mounts.h"

namespace fgds::hf3fs {
namespace {

// 3FS's defaults where io_depth > 0 and no timeout is given: usrbio
// starts a partial batch after its default deadline instead of waiting
// forever for io_depth entries.
int CreateRing(hf3fs_ior* ior, const char* mount_point, int entries,
               bool for_read, int io_depth, int priority, int timeout_ms,
               int numa, uint64_t flags) {
  (void)numa;  // the ring is small; its pages land where the daemon maps
  if (ior == nullptr || mount_point == nullptr || entries <= 0 ||
      entries > static_cast<int>(FGDS_RING_MAX_ENTRIES) || timeout_ms < 0 ||
      std::strlen(mount_point) >= sizeof(ior->mount_point)) {
    return -EINVAL;
  }
  // ALLOW_READ_UNCOMMITTED: a usrbio read always sees every completed
  // write, so there is nothing uncommitted to allow. FORBID_READ_HOLES
  // needs the backend to report holes, which it does not.
  if ((flags & ~static_cast<uint64_t>(HF3FS_IOR_ALLOW_READ_UNCOMMITTED |
                                      HF3FS_IOR_FORBID_READ_HOLES)) != 0) {
    return -EINVAL;
  }
  if ((flags & HF3FS_IOR_FORBID_READ_HOLES) != 0) return -EOPNOTSUPP;
  int error = 0;
  auto* handle = new IorHandle();
  handle->session = AcquireSession(mount_point, &error);
  if (handle->session == nullptr) {
    delete handle;
    return error;
  }
  fgds_ior_params params = {};
  params.entries = static_cast<uint32_t>(entries);
  params.io_depth = io_depth > 0 ? static_cast<uint32_t>(io_depth) : 0;
  params.timeout_us = static_cast<uint32_t>(timeout_ms) * 1000u;
  // 3FS: a lower number is more urgent (".ph" for < 0, ".pl" for > 0).
  params.priority = priority < 0 ? 1 : priority > 0 ? -1 : 0;
  error = fgds_ior_create(handle->session, &handle->ior, &params);
  if (error != 0) {
    ReleaseSession(handle->session);
    delete handle;
    return error;
  }
  // Up to cq_entries entries may be in flight (prepared, submitted or
  // completed and not yet reaped): one slot each.
  handle->userdata.assign(handle->ior.cq_entries, nullptr);
  for (uint32_t slot = handle->ior.cq_entries; slot > 0; --slot) {
    handle->free_slots.push_back(slot - 1);
  }
  std::memset(&ior->iov, 0, sizeof(ior->iov));
  ior->iov.base = reinterpret_cast<uint8_t*>(handle->ior.ring);
  ior->iov.size = handle->ior.map_size;
  ior->iov.numa = numa;
  ior->iorh = handle;
  std::snprintf(ior->mount_point, sizeof(ior->mount_point), "%s", mount_point);
  std::snprintf(ior->iov.mount_point, sizeof(ior->iov.mount_point), "%s",
                mount_point);
  ior->for_read = for_read;
  ior->io_depth = io_depth;
  ior->priority = priority;
  ior->timeout = timeout_ms;
  ior->flags = flags;
  return 0;
}

IorHandle* HandleOf(const hf3fs_ior* ior) {
  return ior == nullptr ? nullptr : static_cast<IorHandle*>(ior->iorh);
}

// Microseconds from now until the CLOCK_REALTIME instant `deadline`
// (0 when it passed), or -1 for no deadline.
int64_t MicrosecondsUntil(const struct timespec* deadline) {
  if (deadline == nullptr) return -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t us = (deadline->tv_sec - now.tv_sec) * 1000000 +
                     (deadline->tv_nsec - now.tv_nsec) / 1000;
  return std::max<int64_t>(us, 0);
}

}  // namespace
}  // namespace fgds::hf3fs

using fgds::hf3fs::HandleOf;
using fgds::hf3fs::IorHandle;
using fgds::hf3fs::IovHandle;

extern "C" {

size_t hf3fs_ior_size(int entries) {
  fgds_ring_layout layout;
  if (entries <= 0 ||
      fgds_ring_get_layout(static_cast<uint32_t>(entries), &layout) != 0) {
    return 0;
  }
  return layout.total_size;
}

int hf3fs_iorcreate(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                    int entries, bool for_read, int io_depth, int numa) {
  return fgds::hf3fs::CreateRing(ior, hf3fs_mount_point, entries, for_read,
                                 io_depth, 0, 0, numa, 0);
}

int hf3fs_iorcreate2(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int priority,
                     int numa) {
  return fgds::hf3fs::CreateRing(ior, hf3fs_mount_point, entries, for_read,
                                 io_depth, priority, 0, numa, 0);
}

int hf3fs_iorcreate3(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int priority,
                     int timeout, int numa) {
  return fgds::hf3fs::CreateRing(ior, hf3fs_mount_point, entries, for_read,
                                 io_depth, priority, timeout, numa, 0);
}

int hf3fs_iorcreate4(struct hf3fs_ior* ior, const char* hf3fs_mount_point,
                     int entries, bool for_read, int io_depth, int timeout,
                     int numa, uint64_t flags) {
  return fgds::hf3fs::CreateRing(ior, hf3fs_mount_point, entries, for_read,
                                 io_depth, 0, timeout, numa, flags);
}

void hf3fs_iordestroy(struct hf3fs_ior* ior) {
  IorHandle* handle = HandleOf(ior);
  if (handle == nullptr) return;
  fgds_ior_destroy(&handle->ior);
  fgds::hf3fs::ReleaseSession(handle->session);
  delete handle;
  ior->iorh = nullptr;
}

int hf3fs_io_entries(const struct hf3fs_ior* ior) {
  IorHandle* handle = HandleOf(ior);
  return handle == nullptr ? -EINVAL : static_cast<int>(handle->ior.sq_entries);
}

int hf3fs_prep_io(const struct hf3fs_ior* ior, const struct hf3fs_iov* iov,
                  bool read, void* ptr, int fd, size_t off, uint64_t len,
                  const void* userdata) {
  IorHandle* handle = HandleOf(ior);
  if (handle == nullptr || iov == nullptr || iov->iovh == nullptr ||
      ptr == nullptr || len == 0) {
    return -EINVAL;
  }
  if (read != ior->for_read) return -EINVAL;  // a ring has one direction
  const auto* buffer = static_cast<const IovHandle*>(iov->iovh);
  // The caller's view of the iov (a wrap may be part of a larger one).
  const auto* at = static_cast<const uint8_t*>(ptr);
  if (at < iov->base || len > iov->size ||
      static_cast<size_t>(at - iov->base) > iov->size - len) {
    return -EINVAL;
  }
  if (iov->block_size != 0) {
    const size_t first = static_cast<size_t>(at - iov->base) / iov->block_size;
    const size_t last =
        static_cast<size_t>(at - iov->base + len - 1) / iov->block_size;
    if (first != last) return -EINVAL;  // crosses a block, as in 3FS
  }
  fgds::hf3fs::RegisteredFile file;
  if (!fgds::hf3fs::FindFile(fd, &file)) return -EBADF;
  if (file.session != handle->session || buffer->session != handle->session) {
    return -EXDEV;  // iov, file and ring must be on one mount
  }
  uint32_t slot;
  {
    std::lock_guard<std::mutex> lock(handle->mu);
    if (handle->free_slots.empty()) return -EAGAIN;
    slot = handle->free_slots.back();
    handle->free_slots.pop_back();
    handle->userdata[slot] = userdata;
  }
  const int ret = fgds_prep_io(&handle->ior, buffer->target,
                               read ? FGDS_OP_READ : FGDS_OP_WRITE, 0, ptr,
                               file.id, off, len, slot);
  if (ret != 0) {
    std::lock_guard<std::mutex> lock(handle->mu);
    handle->free_slots.push_back(slot);
    return ret;
  }
  return static_cast<int>(slot);
}

int hf3fs_submit_ios(const struct hf3fs_ior* ior) {
  IorHandle* handle = HandleOf(ior);
  if (handle == nullptr) return -EINVAL;
  const int ret = fgds_ior_submit(&handle->ior);
  return ret < 0 ? ret : 0;
}

int hf3fs_wait_for_ios(const struct hf3fs_ior* ior, struct hf3fs_cqe* cqes,
                       int cqec, int min_results,
                       const struct timespec* abs_timeout) {
  IorHandle* handle = HandleOf(ior);
  if (handle == nullptr || cqec < 0 || (cqes == nullptr && cqec > 0) ||
      min_results < 0 || min_results > cqec) {
    return -EINVAL;
  }
  if (cqec == 0) return 0;
  std::vector<fgds_cqe> done(static_cast<size_t>(cqec));
  // usrbio refuses to wait for more than is in flight; 3FS would wait out
  // the timeout for them. Waiting for what can still come is the same
  // answer sooner.
  const unsigned in_flight =
      __atomic_load_n(&handle->ior.in_flight, __ATOMIC_ACQUIRE);
  const unsigned min = std::min(static_cast<unsigned>(min_results), in_flight);
  const int n =
      fgds_ior_wait(&handle->ior, done.data(), static_cast<unsigned>(cqec), min,
                    fgds::hf3fs::MicrosecondsUntil(abs_timeout));
  if (n < 0) return n;
  std::lock_guard<std::mutex> lock(handle->mu);
  for (int i = 0; i < n; ++i) {
    const auto slot = static_cast<uint32_t>(done[i].userdata);
    cqes[i].index = static_cast<int32_t>(slot);
    cqes[i].reserved = 0;
    cqes[i].result = done[i].result;
    cqes[i].userdata = handle->userdata[slot];
    handle->free_slots.push_back(slot);
  }
  return n;
}

}  // extern "C"
