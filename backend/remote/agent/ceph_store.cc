#include "backend/remote/agent/ceph_store.h"

#include <cephfs/libcephfs.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "backend/ceph/ceph_connect.h"
#include "backend/remote/agent/ceph_inode.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/inode_name.h"

namespace fgds::remote {

absl::StatusOr<std::unique_ptr<CephStore>> CephStore::Open(
    const backend::CephOptions& options) {
  auto cmount = backend::ConnectCeph(options);
  if (!cmount.ok()) return cmount.status();
  std::string description = absl::StrCat(
      "CephFS ", options.fs.empty() ? std::string("(default)") : options.fs,
      " subtree ", options.root, " of ", options.conf);
  const bool whole_fs = options.root.empty() || options.root == "/";
  return std::unique_ptr<CephStore>(
      new CephStore(*cmount, std::move(description), whole_fs));
}

CephStore::~CephStore() {
  handles_.reset();
  ceph_unmount(cmount_);
  ceph_release(cmount_);
}

int CephStore::OpenFile(const std::string& path, int access) {
  if (int rc = CheckRelativePath(path); rc != 0) return rc;
  // The type first, without following a final symlink: only regular files
  // are served (as the directory store does).
  struct ceph_statx stx = {};
  int rc = ceph_statx(cmount_, path.c_str(), &stx, CEPH_STATX_MODE,
                      AT_SYMLINK_NOFOLLOW);
  if (rc < 0) return rc;
  if (!S_ISREG(stx.stx_mode)) return S_ISDIR(stx.stx_mode) ? -EISDIR : -EINVAL;
  int fd = ceph_open(cmount_, path.c_str(), access | O_NOFOLLOW, 0);
  if (fd < 0) return fd;
  // The file may have been replaced between the two calls: check again on
  // what was opened.
  if ((rc = ceph_fstatx(cmount_, fd, &stx, CEPH_STATX_MODE, 0)) < 0 ||
      !S_ISREG(stx.stx_mode)) {
    ceph_close(cmount_, fd);
    return rc < 0 ? rc : -EINVAL;
  }
  return fd;
}

int64_t CephStore::MoveByInode(uint64_t ino, bool write, uint64_t offset,
                               char* buf, size_t length) {
  if (!whole_fs_) return -EPERM;
  Fh* fh = nullptr;
  if (int rc = handles_->Acquire(ino, write, &fh); rc < 0) return rc;
  const Moved m = MoveAll(length, [&](size_t done) -> int64_t {
    const auto off = static_cast<int64_t>(offset + done);
    return write ? ceph_ll_write(cmount_, fh, off, length - done, buf + done)
                 : ceph_ll_read(cmount_, fh, off, length - done, buf + done);
  });
  int error = m.error;
  if (write && error == 0 && m.bytes < length) error = -EIO;
  // A write sits in this client's buffers until Sync (the handle cache
  // syncs a write handle before closing it).
  handles_->Release(ino, write);
  if (write && error < 0) return error;
  return m.bytes > 0 ? static_cast<int64_t>(m.bytes) : error;
}

int64_t CephStore::Read(const std::string& path, uint64_t offset, void* out,
                        size_t length) {
  if (uint64_t ino; ParseInodeName(path, &ino)) {
    return MoveByInode(ino, false, offset, static_cast<char*>(out), length);
  }
  int fd = OpenFile(path, O_RDONLY);
  if (fd < 0) return fd;
  auto* p = static_cast<char*>(out);
  const Moved m = MoveAll(length, [&](size_t done) -> int64_t {
    return ceph_read(cmount_, fd, p + done, length - done,
                     static_cast<int64_t>(offset + done));
  });
  ceph_close(cmount_, fd);
  return m.bytes > 0 ? static_cast<int64_t>(m.bytes) : m.error;
}

int64_t CephStore::Write(const std::string& path, uint64_t offset,
                         const void* data, size_t length) {
  if (uint64_t ino; ParseInodeName(path, &ino)) {
    // ceph_ll_write only reads the buffer.
    return MoveByInode(ino, true, offset,
                       const_cast<char*>(static_cast<const char*>(data)),
                       length);
  }
  int fd = OpenFile(path, O_WRONLY);
  if (fd < 0) return fd;
  const auto* p = static_cast<const char*>(data);
  const Moved m = MoveAll(length, [&](size_t done) -> int64_t {
    return ceph_write(cmount_, fd, p + done, length - done,
                      static_cast<int64_t>(offset + done));
  });
  int error = m.error;
  if (error == 0 && m.bytes < length) error = -EIO;  // wrote nothing more
  // The bytes stay in this client's buffers (the inode's, not the
  // descriptor's) until Sync or Ceph's own write-back.
  ceph_close(cmount_, fd);
  if (error < 0) return error;
  return static_cast<int64_t>(m.bytes);
}

int CephStore::Sync(const std::string& path) {
  // The daemon's fsync goes to its own libcephfs client, which never saw
  // the bytes written here: without this, data buffered in this client
  // would be lost with the agent while the application believed it synced.
  if (uint64_t ino; ParseInodeName(path, &ino)) {
    if (!whole_fs_) return -EPERM;
    return handles_->Sync(ino);
  }
  int fd = OpenFile(path, O_RDONLY);
  if (fd < 0) return fd;
  // Writes through descriptors closed since sit in the inode's buffers,
  // which a sync through any descriptor of the inode writes back.
  const int rc = ceph_fsync(cmount_, fd, /*syncdataonly=*/1);
  ceph_close(cmount_, fd);
  return rc;
}

}  // namespace fgds::remote
