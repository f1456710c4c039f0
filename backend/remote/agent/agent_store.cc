#include "backend/remote/agent/agent_store.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/inode_name.h"
#include "common/errno_status.h"

namespace fgds::remote {

absl::StatusOr<std::unique_ptr<DirStore>> DirStore::Open(
    const std::string& root) {
  int fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError(absl::StrCat("data directory ", root), errno);
  return std::unique_ptr<DirStore>(new DirStore(root, fd));
}

DirStore::~DirStore() { close(root_fd_); }

std::string DirStore::Describe() const {
  return absl::StrCat("directory ", root_);
}

int DirStore::OpenFile(const std::string& name, int access) {
  if (int rc = CheckRelativePath(name); rc != 0) return rc;
  // A checked path (inode_name.h) must still be the file it was.
  uint64_t want_ino = 0;
  std::string_view checked_path;
  const std::string path = ParseCheckedPathName(name, &want_ino, &checked_path)
                               ? std::string(checked_path)
                               : name;
  // First an O_PATH descriptor, resolved strictly beneath the root (".."
  // and symlinks may not leave it, /proc magic links are refused), so that
  // the type is known before anything is opened for real: opening a FIFO
  // would block this thread and a device could act on open.
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int pfd = static_cast<int>(
      syscall(SYS_openat2, root_fd_, path.c_str(), &how, sizeof(how)));
  if (pfd < 0) return -errno;
  struct stat st;
  if (fstat(pfd, &st) != 0) {
    int err = errno;
    close(pfd);
    return -err;
  }
  if (!S_ISREG(st.st_mode)) {
    close(pfd);
    return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
  }
  if (want_ino != 0 && st.st_ino != want_ino) {
    close(pfd);
    return -ESTALE;
  }
  // Reopen the very file the O_PATH descriptor names.
  const std::string self = absl::StrCat("/proc/self/fd/", pfd);
  int fd = open(self.c_str(), access | O_CLOEXEC);
  int err = errno;
  close(pfd);
  return fd >= 0 ? fd : -err;
}

int64_t DirStore::Read(const std::string& path, uint64_t offset, void* out,
                       size_t length) {
  int fd = OpenFile(path, O_RDONLY);
  if (fd < 0) return fd;
  auto* p = static_cast<char*>(out);
  const Moved m = MoveAll(length, [&](size_t done) -> int64_t {
    ssize_t n =
        pread(fd, p + done, length - done, static_cast<off_t>(offset + done));
    return n < 0 ? -errno : n;
  });
  close(fd);
  // Bytes read before an error are reported, as read(2) does.
  return m.bytes > 0 ? static_cast<int64_t>(m.bytes) : m.error;
}

int64_t DirStore::Write(const std::string& path, uint64_t offset,
                        const void* data, size_t length) {
  int fd = OpenFile(path, O_WRONLY);
  if (fd < 0) return fd;
  const auto* p = static_cast<const char*>(data);
  const Moved m = MoveAll(length, [&](size_t done) -> int64_t {
    ssize_t n =
        pwrite(fd, p + done, length - done, static_cast<off_t>(offset + done));
    return n < 0 ? -errno : n;
  });
  close(fd);
  // Bytes written before an error are reported, as write(2) does.
  return m.bytes > 0 ? static_cast<int64_t>(m.bytes) : m.error;
}

int DirStore::Sync(const std::string& path) {
  // The page cache is per file, not per descriptor: fdatasync on a new
  // descriptor writes back what earlier ones wrote, and reports a
  // write-back error that no descriptor has seen yet (Linux's errseq: a
  // new descriptor starts before an unseen error).
  int fd = OpenFile(path, O_RDONLY);
  if (fd < 0) return fd;
  int rc = fdatasync(fd) == 0 ? 0 : -errno;
  close(fd);
  return rc;
}

}  // namespace fgds::remote
