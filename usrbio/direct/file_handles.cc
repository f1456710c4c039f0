#include "usrbio/direct/file_handles.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/kmod/storage_device.h"

namespace fgds::direct {
namespace {

// Reopen opens the file behind `fd` again with `flags`: /proc/self/fd/N
// names the open file itself, so a renamed or unlinked file still works.
int Reopen(int fd, int flags) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  int twin;
  do {
    twin = open(path.c_str(), flags | O_CLOEXEC);
  } while (twin < 0 && errno == EINTR);
  return twin;
}

}  // namespace

int FileHandles::Open(int fd, std::shared_ptr<FileHandles>* out,
                      std::string* message) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    *message = "fd " + std::to_string(fd) + " is not an open file";
    return -EBADF;
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    *message =
        "fd " + std::to_string(fd) + " is not a regular file or block device";
    return -EBADF;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) {
    *message = "fcntl(F_GETFL) on fd " + std::to_string(fd) + " failed";
    return -EBADF;
  }
  std::shared_ptr<FileHandles> handles(new FileHandles());
  const int access = flags & O_ACCMODE;
  handles->readable_ = access == O_RDONLY || access == O_RDWR;
  handles->writable_ = access == O_WRONLY || access == O_RDWR;
  handles->storage_device_ = kmod::StorageDeviceOf(st);
  if ((flags & O_DIRECT) != 0) {
    handles->direct_fd_ = fd;
    handles->buffered_fd_ = Reopen(fd, access);
    handles->own_buffered_ = handles->buffered_fd_ >= 0;
  } else {
    handles->buffered_fd_ = fd;
    handles->direct_fd_ = Reopen(fd, access | O_DIRECT);
    handles->own_direct_ = handles->direct_fd_ >= 0;
  }
  *out = std::move(handles);
  return 0;
}

FileHandles::~FileHandles() {
  if (own_direct_) close(direct_fd_);
  if (own_buffered_) close(buffered_fd_);
}

int FileTable::Register(int fd, std::string* message) {
  std::shared_ptr<FileHandles> handles;
  if (int error = FileHandles::Open(fd, &handles, message); error != 0) {
    return error;
  }
  fgds::MutexLock lock(&mu_);
  if (!registered_.emplace(fd, std::move(handles)).second) {
    *message = "fd " + std::to_string(fd) + " is already registered";
    return -EEXIST;
  }
  return 0;
}

int FileTable::Deregister(int fd) {
  std::shared_ptr<FileHandles> handles;  // closed outside the lock
  fgds::MutexLock lock(&mu_);
  auto it = registered_.find(fd);
  if (it == registered_.end()) return -ENOENT;
  handles = std::move(it->second);
  registered_.erase(it);
  return 0;
}

int FileTable::Get(int fd, bool write, std::shared_ptr<FileHandles>* out,
                   std::string* message) {
  {
    fgds::MutexLock lock(&mu_);
    auto it = registered_.find(fd);
    if (it != registered_.end()) *out = it->second;
  }
  if (*out == nullptr) {
    if (int error = FileHandles::Open(fd, out, message); error != 0) {
      return error;
    }
  }
  if (write ? !(*out)->writable() : !(*out)->readable()) {
    *message = "fd " + std::to_string(fd) + " is not open for " +
               (write ? "writing" : "reading");
    out->reset();
    return -EBADF;
  }
  return 0;
}

void FileTable::Clear() {
  std::map<int, std::shared_ptr<FileHandles>> old;
  fgds::MutexLock lock(&mu_);
  old.swap(registered_);
}

}  // namespace fgds::direct
