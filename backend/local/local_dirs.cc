// LocalBackend: directory handles.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "backend/local/local_backend.h"

namespace fgds::backend {

// An open directory stream. `entry` is read but not yet taken by the kernel
// (its buffer was full), so the next ReadDir at `offset` starts with it.
class Dir {
 public:
  explicit Dir(DIR* stream_in) : stream(stream_in) {}
  ~Dir() { closedir(stream); }
  DIR* const stream;
  off_t offset = 0;
  struct dirent* entry = nullptr;
  off_t entry_next = 0;  // telldir() right after `entry` was read
};

int LocalBackend::OpenDir(NodeId node, Dir** out) {
  PathFd dir = inodes_.Open(inodes_.Get(node));
  if (!dir.ok()) return dir.error();
  int fd = openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  DIR* stream = fdopendir(fd);
  if (stream == nullptr) {
    int err = errno;
    close(fd);
    return -err;
  }
  *out = new Dir(stream);
  return 0;
}

int LocalBackend::ReadDir(Dir* dir, off_t offset,
                          const std::function<bool(const DirEntry&)>& emit) {
  // The kernel serializes readdir calls on one open directory, so the
  // stream position needs no lock of its own.
  if (offset != dir->offset) {
    seekdir(dir->stream, offset);
    dir->entry = nullptr;
    dir->offset = offset;
  }
  for (;;) {
    if (dir->entry == nullptr) {
      errno = 0;
      dir->entry = readdir(dir->stream);
      if (dir->entry == nullptr) return errno != 0 ? -errno : 0;
      dir->entry_next = telldir(dir->stream);
    }
    DirEntry entry{dir->entry->d_name, dir->entry->d_ino, dir->entry->d_type,
                   dir->entry_next};
    if (!emit(entry)) return 0;
    dir->entry = nullptr;
    dir->offset = entry.next_offset;
  }
}

void LocalBackend::ReleaseDir(Dir* dir) { delete dir; }

bool LocalBackend::HoldsEntry(NodeId dir, ino_t ino) {
  // An entry is on its directory's filesystem, except a mount point, whose
  // d_ino is the covered directory's: no node has that key, so it is
  // looked up, as it should be.
  return inodes_.Holds(inodes_.Get(dir).dev, ino);
}

int LocalBackend::FsyncDir(Dir* dir, bool datasync) {
  int fd = dirfd(dir->stream);
  int res = datasync ? fdatasync(fd) : fsync(fd);
  return res == 0 ? 0 : -errno;
}

}  // namespace fgds::backend
