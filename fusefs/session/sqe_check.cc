#include "fusefs/session/sqe_check.h"

#include <cerrno>
#include <cstdint>

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
  out->file = (*file)->file;
  out->registered = file;
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

  const bool buffered =
      (sqe.flags & FGDS_SQE_BUFFERED) || (ring_flags & FGDS_IOR_BUFFERED);
  out->write = write;
  out->file = (*file)->file;
  out->region = iov->get();
  out->buf = (*iov)->base() + sqe.iov_offset;
  out->len = sqe.len;
  out->offset = sqe.file_offset;
  out->flags = buffered ? 0 : backend::kIoPreferDirect;
  if (write && (*file)->unprivileged_writer) {
    out->flags |= backend::kIoKillPrivileges;
  }
  out->iov = iov;
  out->registered = file;
  return 0;
}

}  // namespace fgds::session
