// LocalBackend: opening a node the kernel holds for a usrbio registration
// (a client's fd on the mount becomes a handle of the backing file, so the
// daemon never does I/O through its own mount).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "backend/local/inode_table.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"

namespace fgds::backend {

int LocalBackend::OpenNode(NodeId node, int flags, File** out) {
  // Ids below kFirstNodeId other than the root are the daemon's own virtual
  // files (/.fgds): no backing file, and nothing a client may register.
  if (!IsBackendNode(node)) return -EPERM;
  // The lookup first: it takes the table's lock, which the FUSE thread that
  // made this inode released after filling it in. The id reached us
  // through the kernel and the client (the kernel holds the node while the
  // client's fd is open), an order ThreadSanitizer cannot see; the lock
  // makes it visible, and costs one uncontended acquire per registration.
  inodes_.Acquire(node);
  LocalInode& inode = inodes_.Get(node);
  if (inode.type != S_IFREG) {
    inodes_.Forget(node, 1);
    return -EINVAL;
  }
  int fd = ReopenNode(inode, (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_APPEND |
                                        O_DIRECT | O_NOFOLLOW)) |
                                 O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    inodes_.Forget(node, 1);
    return fd;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    inodes_.Forget(node, 1);
    return -err;
  }
  *out = new File(fd, st, CloseIsNoop(fd, st), inode, node,
                  /*keep_cache=*/false, /*want_twin=*/true,
                  /*holds_lookup=*/true);
  inodes_.FileOpened(inode, fd);
  return 0;
}

}  // namespace fgds::backend
