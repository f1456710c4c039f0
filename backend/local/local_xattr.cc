// LocalBackend: extended attributes. O_PATH descriptors refuse f*xattr(),
// so these go through the node's /proc/self/fd link.
#include <sys/xattr.h>

#include <cerrno>

#include "backend/local/local_backend.h"

namespace fgds::backend {

int LocalBackend::SetXattr(NodeId node, const char* name, const void* value,
                           size_t size, int flags) {
  LocalInode& inode = inodes_.Get(node);
  if (inode.type == S_IFLNK) return -EPERM;  // as Linux does for user.*
  PathFd fd = inodes_.Open(inode);
  if (!fd.ok()) return fd.error();
  if (setxattr(ProcFdPath(fd.get()).c_str(), name, value, size, flags) != 0) {
    return -errno;
  }
  return 0;
}

int LocalBackend::GetXattr(NodeId node, const char* name, void* value,
                           size_t size) {
  LocalInode& inode = inodes_.Get(node);
  if (inode.type == S_IFLNK) return -ENODATA;
  PathFd fd = inodes_.Open(inode);
  if (!fd.ok()) return fd.error();
  ssize_t n = getxattr(ProcFdPath(fd.get()).c_str(), name, value, size);
  return n >= 0 ? static_cast<int>(n) : -errno;
}

int LocalBackend::ListXattr(NodeId node, char* list, size_t size) {
  LocalInode& inode = inodes_.Get(node);
  if (inode.type == S_IFLNK) return 0;
  PathFd fd = inodes_.Open(inode);
  if (!fd.ok()) return fd.error();
  ssize_t n = listxattr(ProcFdPath(fd.get()).c_str(), list, size);
  return n >= 0 ? static_cast<int>(n) : -errno;
}

int LocalBackend::RemoveXattr(NodeId node, const char* name) {
  LocalInode& inode = inodes_.Get(node);
  if (inode.type == S_IFLNK) return -ENODATA;
  PathFd fd = inodes_.Open(inode);
  if (!fd.ok()) return fd.error();
  if (removexattr(ProcFdPath(fd.get()).c_str(), name) != 0) return -errno;
  return 0;
}

}  // namespace fgds::backend
