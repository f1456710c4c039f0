// usrbio iovs: memfd buffers mapped here and by the daemon.
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/internal.h"

namespace fgds::usrbio {
namespace {

constexpr uint64_t kPage = 4096;
// A sanity bound, not a policy: the daemon enforces its own limit.
constexpr uint64_t kMaxIovSize = uint64_t{1} << 40;

// Prefers `node` for the pages of [addr, addr+len), before any is touched.
// No libnuma: one mbind(2) call is all it takes.
int BindToNode(void* addr, uint64_t len, int node) {
  constexpr int kMaxNode = 64;
  if (node >= kMaxNode) return -EINVAL;
  unsigned long mask = 1UL << node;
  if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, &mask, kMaxNode + 1, 0) !=
      0) {
    return -errno;
  }
  return 0;
}

// Allocates every page of the shared mapping [addr, addr+len) now, in this
// process, under its memory policy (BindToNode) and charged to its memory
// cgroup: the daemon maps only memory its owner has paid for
// (docs/limits.md). MADV_POPULATE_WRITE (Linux 5.14) does it in one call;
// older kernels get one write per page.
int AllocatePages(void* addr, uint64_t len) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(addr, len, MADV_POPULATE_WRITE) == 0) return 0;
  // EINVAL: a kernel before 5.14; ENOSYS: one built without madvise
  // (CONFIG_ADVISE_SYSCALLS, as small kernels are) or a seccomp filter.
  if (errno != EINVAL && errno != ENOSYS) {
    return errno == EFAULT ? -ENOMEM : -errno;
  }
#endif
  // A fresh memfd reads as zeros: writing a zero changes nothing but
  // allocates the page. (A shortage here is SIGBUS or the OOM killer, as
  // for any first touch of memory.)
  volatile char* p = static_cast<volatile char*>(addr);
  for (uint64_t off = 0; off < len; off += kPage) p[off] = 0;
  return 0;
}

}  // namespace
}  // namespace fgds::usrbio

using fgds::usrbio::ErrnoSaver;

extern "C" int fgds_iov_create(struct fgds_session* session,
                               struct fgds_iov* iov,
                               const struct fgds_iov_params* params) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || iov == nullptr || params == nullptr) return -EINVAL;
  if (params->flags != 0 || params->size == 0 ||
      params->size > fgds::usrbio::kMaxIovSize || params->numa_node < -1) {
    return -EINVAL;
  }
  for (uint64_t r : params->reserved) {
    if (r != 0) return -EINVAL;
  }
  const uint64_t size =
      (params->size + fgds::usrbio::kPage - 1) & ~(fgds::usrbio::kPage - 1);
  // A memfd, not /dev/shm: it has no name to leak when this process dies.
  int memfd = memfd_create("fgds-iov", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0) return -errno;
  void* base = MAP_FAILED;
  int ret = 0;
  uint32_t id = 0;
  if (ftruncate(memfd, static_cast<off_t>(size)) != 0 ||
      // The daemon maps it too: a shrink would turn its accesses into
      // SIGBUS, so the daemon refuses memfds without this seal.
      fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    ret = -errno;
    goto close_memfd;
  }
  base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) {
    ret = -errno;
    goto close_memfd;
  }
  if (params->numa_node >= 0) {
    ret = fgds::usrbio::BindToNode(base, size, params->numa_node);
    if (ret != 0) goto unmap;
  }
  ret = fgds::usrbio::AllocatePages(base, size);
  if (ret != 0) goto unmap;
  {
    fgds_msg_iov_register msg = {};
    msg.size = size;
    ret = fgds::usrbio::Exchange(session, FGDS_MSG_IOV_REGISTER, &msg,
                                 sizeof(msg), &memfd, 1, &id);
  }
  if (ret != 0) goto unmap;
  iov->base = base;
  iov->size = size;
  iov->id = id;
  iov->memfd = memfd;
  iov->session = session;
  iov->gpu = nullptr;
  return 0;

unmap:
  munmap(base, size);
close_memfd:
  close(memfd);
  return ret;
}

extern "C" int fgds_iov_destroy(struct fgds_iov* iov) noexcept {
  ErrnoSaver saver;
  if (iov == nullptr || iov->session == nullptr) return -EINVAL;
  if (iov->gpu != nullptr) return fgds::usrbio::gpu::DestroyGpuIov(iov);
  // Unmap here even if the daemon is gone: our mapping is ours to drop.
  int ret =
      fgds::usrbio::Unregister(iov->session, FGDS_MSG_IOV_UNREGISTER, iov->id);
  munmap(iov->base, iov->size);
  close(iov->memfd);
  iov->base = nullptr;
  iov->memfd = -1;
  iov->session = nullptr;
  return ret;
}
