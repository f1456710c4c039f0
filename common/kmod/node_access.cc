#include "common/kmod/node_access.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fgds::kmod {

int SocketPeerUser(int sock, NodeUser* user) {
  ucred cred = {};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return -errno;
  }
  // SO_PEERGROUPS answers ERANGE with the size it needs.
  std::vector<gid_t> groups(16);
  for (;;) {
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      break;
    }
    if (errno != ERANGE) return -errno;
    groups.resize(len / sizeof(gid_t) + 1);
  }
  user->uid = cred.uid;
  user->gid = cred.gid;
  user->groups = std::move(groups);
  return 0;
}

int CheckNodeAccess(const std::string& path, const NodeUser& user,
                    std::string* message) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int error = errno;
    *message =
        "cannot stat " + path + ": " + std::strerror(error) +
        (error == ENOENT ? " (the fgds kernel module is not loaded)" : "");
    return -error;
  }
  if (user.uid == 0) return 0;
  // The kernel's order: the owner's bits for the owner, else the group's
  // for a member, else the others'. Only one class applies.
  mode_t rw;
  if (st.st_uid == user.uid) {
    rw = S_IRUSR | S_IWUSR;
  } else if (st.st_gid == user.gid ||
             std::find(user.groups.begin(), user.groups.end(), st.st_gid) !=
                 user.groups.end()) {
    rw = S_IRGRP | S_IWGRP;
  } else {
    rw = S_IROTH | S_IWOTH;
  }
  if ((st.st_mode & rw) == rw) return 0;
  char text[160];
  std::snprintf(text, sizeof(text),
                ": uid %u (gid %u) may not use it (owner %u, group %u, mode "
                "%04o; the fgds group's members may)",
                user.uid, user.gid, st.st_uid, st.st_gid, st.st_mode & 07777);
  *message = path + text;
  return -EACCES;
}

}  // namespace fgds::kmod
