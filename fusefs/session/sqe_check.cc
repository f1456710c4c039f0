#include "fusefs/session/sqe_check.h"

#include <cerrno>
#include <cstdint>

#include "common/page_cache.h"
#include "fgds/usrbio.h"

namespace fgds::session {

namespace {

int CheckSync(const fgds_sqe& sqe, const Registry& registry, CheckedIo* out)
    ABSL_SHARED_LOCKS_REQUIRED(registry.mu()) {
  if ((sqe.flags & ~FGDS_SQE_DATASYNC) != 0 || sqe.iov_id != 0 ||
      sqe.iov_offset != 0 || sqe.file_offset != 0 || sqe.len != 0) {
    return -EINVAL;
  }
  const std::shared_ptr<RegisteredFile>* file = registry.FindFile(sqe.fd_id);
  if (file == nullptr) return -EBADF;
  out->sync = true;
  out->datasync = (sqe.flags & FGDS_SQE_DATASYNC) != 0;
  out->fd = (*file)->fd;
  out->path = FGDS_PATH_NONE;
  out->file = file;
  return 0;
}

}  // namespace

int CheckSqe(const fgds_sqe& sqe, const Registry& registry, uint32_t ring_flags,
             CheckedIo* out) {
  if (sqe.reserved0 != 0 || (sqe.flags & ~FGDS_SQE_VALID_FLAGS) != 0) {
    return -EINVAL;
  }
  if (sqe.opcode == FGDS_OP_FSYNC) return CheckSync(sqe, registry, out);
  if (sqe.opcode != FGDS_OP_READ && sqe.opcode != FGDS_OP_WRITE) {
    return -EINVAL;
  }
  if (sqe.flags & FGDS_SQE_DATASYNC) return -EINVAL;
  if (sqe.len == 0 || sqe.len > kMaxSqeLen) return -EINVAL;
  // off_t is signed: the last byte must stay below 2^63. Written so that no
  // sum can wrap.
  if (sqe.file_offset > static_cast<uint64_t>(INT64_MAX) - sqe.len) {
    return -EINVAL;
  }
  const std::shared_ptr<SharedMemory>* iov = registry.FindIov(sqe.iov_id);
  if (iov == nullptr) return -EINVAL;
  const uint64_t iov_size = (*iov)->size();
  if (sqe.iov_offset > iov_size || sqe.len > iov_size - sqe.iov_offset) {
    return -EINVAL;
  }
  const std::shared_ptr<RegisteredFile>* file = registry.FindFile(sqe.fd_id);
  if (file == nullptr) return -EBADF;
  const bool write = sqe.opcode == FGDS_OP_WRITE;
  if (write ? !(*file)->writable : !(*file)->readable) return -EACCES;

  char* buf = (*iov)->base() + sqe.iov_offset;
  const bool aligned = reinterpret_cast<uintptr_t>(buf) % kDirectAlign == 0 &&
                       sqe.file_offset % kDirectAlign == 0 &&
                       sqe.len % kDirectAlign == 0;
  const bool buffered =
      (sqe.flags & FGDS_SQE_BUFFERED) || (ring_flags & FGDS_IOR_BUFFERED);
  bool direct = aligned && !buffered && (*file)->direct_fd >= 0;
  if ((*iov)->direct_only()) {
    // GPU memory: the client bounces what cannot go O_DIRECT, and cached
    // pages are not copied by the CPU into it either.
    if (!direct) return aligned && !buffered ? -EOPNOTSUPP : -EINVAL;
    // The module checked the P2P route to one device only; a file on
    // another one (a mount inside the backing directory) must not DMA
    // into this memory.
    if ((*iov)->storage_dev() != 0 &&
        (*file)->storage_dev != (*iov)->storage_dev()) {
      return -EXDEV;
    }
  } else if (direct && !write && sqe.len >= kCachedReadCheckMin &&
             FullyCached((*file)->fd, sqe.file_offset, sqe.len)) {
    // A large read whose pages are all cached is a memory copy through the
    // page cache; O_DIRECT would read the disk again. Small reads skip the
    // question: the syscall would cost more than it could save.
    direct = false;
  }

  out->write = write;
  out->fd = direct ? (*file)->direct_fd : (*file)->fd;
  out->buf = buf;
  out->len = sqe.len;
  out->offset = sqe.file_offset;
  out->path = direct ? FGDS_PATH_DIRECT : FGDS_PATH_PAGE_CACHE;
  out->iov = iov;
  out->file = file;
  return 0;
}

}  // namespace fgds::session
