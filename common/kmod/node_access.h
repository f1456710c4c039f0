// File: common/kmod/node_access.h
//
// Who may use a GPU's fgds node. The udev rule (deploy/) gives
// /dev/fgds_* to group fgds; a process of a user outside it cannot open the
// node. The daemon runs as root and opens the node on behalf of its usrbio
// clients (GPU iovs), so it applies the same rule to the user at the other
// end of the session's socket: read and write permission by the node's
// owner, group and other bits, as the kernel checks them (root may).
//
// Example (fusefs/session/gpu_iov.cc):
//   kmod::NodeUser user;
//   if (kmod::SocketPeerUser(sock, &user) == 0 &&
//       kmod::CheckNodeAccess("/dev/fgds_0000_3b_00_0", user, &msg) == 0)
//     ... open the node for this user ...
#ifndef FGDS_COMMON_KMOD_NODE_ACCESS_H_
#define FGDS_COMMON_KMOD_NODE_ACCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace fgds::kmod {

// A user as the kernel's permission check sees a process: uid, primary gid
// and supplementary groups. The default is nobody in particular (uid and
// gid -1), which only "other" permission lets in.
struct NodeUser {
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<gid_t> groups;
};

// SocketPeerUser: the user of the process that connected the unix socket
// `sock`, as the kernel recorded it at connect time (SO_PEERCRED for uid
// and gid, SO_PEERGROUPS for the supplementary groups). 0 or -errno.
int SocketPeerUser(int sock, NodeUser* user);

// CheckNodeAccess: 0 when `user` may open `path` for reading and writing,
// -EACCES (with `message` naming the user, the node's owner, group and
// mode) when not, or stat's -errno (-ENOENT: no such node). Mode bits only:
// a POSIX ACL on the node is not consulted, so an ACL that grants more than
// the mode (udev's uaccess tag) does not count here.
int CheckNodeAccess(const std::string& path, const NodeUser& user,
                    std::string* message);

}  // namespace fgds::kmod

#endif  // FGDS_COMMON_KMOD_NODE_ACCESS_H_
