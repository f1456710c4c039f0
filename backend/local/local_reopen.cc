// LocalBackend: reopening a backing file by the inode number the mount
// reported, for usrbio registrations (a client's fd on the mount becomes a
// descriptor of the backing file, so the daemon never does I/O through its
// own mount).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/local/inode_table.h"
#include "backend/local/local_backend.h"

namespace fgds::backend {

int InodeTable::WithIno(ino_t ino, absl::FunctionRef<int(LocalInode&)> fn) {
  MutexLock lock(&mu_);
  if (root_.ino == ino) return fn(root_);
  LocalInode* found = nullptr;
  for (auto& [key, inode] : inodes_) {
    if (key.second != ino) continue;
    // The mount reports only st_ino: two backing filesystems under the
    // root can share numbers, and guessing would reach the wrong file.
    if (found != nullptr) return -EXDEV;
    found = inode;
  }
  if (found == nullptr) return -ESTALE;
  return fn(*found);
}

int LocalBackend::ReopenByIno(ino_t ino, int flags) {
  return inodes_.WithIno(ino, [flags](LocalInode& inode) {
    if (inode.type != S_IFREG) return -EINVAL;
    // As Open does: the O_PATH descriptor pins the inode, /proc reopens it
    // whatever its name is now.
    int fd = open(ProcFdPath(inode.fd).c_str(),
                  (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_APPEND)) |
                      O_CLOEXEC | O_NOCTTY);
    return fd >= 0 ? fd : -errno;
  });
}

NodeId LocalBackend::NodeByIno(ino_t ino) {
  NodeId node = 0;
  inodes_.WithIno(ino, [&](LocalInode& inode) {
    node = ToNodeId(inode, inodes_.root());
    return 0;
  });
  return node;
}

}  // namespace fgds::backend
