// LocalBackend: opening a backing file by the inode number the mount
// reported, for usrbio registrations (a client's fd on the mount becomes a
// handle of the backing file, so the daemon never does I/O through its own
// mount).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/local/inode_table.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"

namespace fgds::backend {

int InodeTable::AcquireByIno(ino_t ino, NodeId* node) {
  MutexLock lock(&mu_);
  if (root_.ino == ino) {
    *node = kRootNode;
    return 0;
  }
  LocalInode* found = nullptr;
  for (auto& [key, inode] : inodes_) {
    if (key.second != ino) continue;
    // The mount reports only st_ino: two backing filesystems under the
    // root can share numbers, and guessing would reach the wrong file.
    if (found != nullptr) return -EXDEV;
    found = inode;
  }
  if (found == nullptr) return -ESTALE;
  ++found->nlookup;
  *node = reinterpret_cast<NodeId>(found);
  return 0;
}

int LocalBackend::OpenByIno(ino_t ino, int flags, File** out) {
  NodeId node;
  int ret = inodes_.AcquireByIno(ino, &node);
  if (ret != 0) return ret;
  LocalInode& inode = inodes_.Get(node);
  if (inode.type != S_IFREG) {
    inodes_.Forget(node, 1);
    return -EINVAL;
  }
  // As Open does: the O_PATH descriptor pins the inode, /proc reopens it
  // whatever its name is now.
  int fd = open(ProcFdPath(inode.fd).c_str(),
                (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECT)) |
                    O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = -errno;
    inodes_.Forget(node, 1);
    return err;
  }
  *out = new File(fd, inode, node, /*keep_cache=*/false, /*want_twin=*/true,
                  /*holds_lookup=*/true);
  return 0;
}

}  // namespace fgds::backend
