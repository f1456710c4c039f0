// File: fusefs/session/mount_node.h
//
// MountNodeOf: which node of our mount a client's descriptor names, as the
// kernel itself records it. A usrbio registration must reach the very file
// the client opened (and was allowed to open); an inode number would not do:
// st_ino is what the backend reports, and a backing filesystem that hands
// out small numbers makes one number name several files (a control file's
// and another user's), so a scan by number can reach a file the client
// could never open.
//
// The kernel encodes a FUSE file handle as (node id, generation) of the
// inode (fs/fuse/inode.c, fuse_encode_fh): the node id is the one this
// daemon gave out for that inode. While the caller holds the descriptor,
// the kernel holds the inode, so the daemon has not been told to forget the
// node and the id names a live node of ours.
//
// Example:
//   uint64_t node;
//   int ret = MountNodeOf(client_fd, mount_dev, &node);  // fd still held
//   if (ret == 0) ret = backend->OpenNode(node, mode, &file);
//   close(client_fd);
#ifndef FGDS_FUSEFS_SESSION_MOUNT_NODE_H_
#define FGDS_FUSEFS_SESSION_MOUNT_NODE_H_

#include <sys/types.h>

#include <cstdint>

namespace fgds::session {

// Sets *node to the FUSE node id of the file `fd` is open on, or returns
// -errno. -EBADF: `fd` is not on the mount whose st_dev is `mount_dev`
// (another FUSE daemon's node ids mean nothing here, and since Linux 6.6 a
// filesystem without export support, e.g. pipefs, encodes the same handle
// type from its inode number, so the type alone proves nothing), or the
// handle is not a FUSE node's. Makes no request to the daemon's FUSE loop
// beyond an fstat: the kernel encodes the handle from its own inode.
int MountNodeOf(int fd, dev_t mount_dev, uint64_t* node);

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_MOUNT_NODE_H_
