#include "backend/local/creation_mode.h"

#include <linux/xattr.h>
#include <sys/xattr.h>

#include "backend/local/local_backend.h"

namespace fgds::backend {

mode_t CreationMode(int dir_fd, mode_t mode, mode_t umask) {
  if ((mode & umask) == 0) return mode;
  // Size query only. Any failure (ENODATA, EOPNOTSUPP where the filesystem
  // has no ACLs) means no default ACL: the umask applies.
  const ssize_t n = getxattr(ProcFdPath(dir_fd).c_str(),
                             XATTR_NAME_POSIX_ACL_DEFAULT, nullptr, 0);
  return n > 0 ? mode : mode & ~umask;
}

}  // namespace fgds::backend
