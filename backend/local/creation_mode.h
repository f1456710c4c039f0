// File: backend/local/creation_mode.h
//
// The mode a new file, directory or node gets from its creator's umask.
// With POSIX ACLs enforced, the mount asks the kernel not to apply the
// umask itself (FUSE_CAP_DONT_MASK, fusefs/ops_table.cc): as on a local
// filesystem, a parent directory's default ACL replaces the umask, and only
// the daemon can tell whether there is one. The backing filesystem then
// applies the default ACL itself, the daemon's own umask being 0.
#ifndef FGDS_BACKEND_LOCAL_CREATION_MODE_H_
#define FGDS_BACKEND_LOCAL_CREATION_MODE_H_

#include <sys/types.h>

namespace fgds::backend {

// `mode` less `umask`, unless the directory `dir_fd` (an O_PATH descriptor)
// has a default ACL. One getxattr when `umask` is not 0.
mode_t CreationMode(int dir_fd, mode_t mode, mode_t umask);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_CREATION_MODE_H_
