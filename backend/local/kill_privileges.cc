#include "backend/local/kill_privileges.h"

#include <sys/stat.h>

#include <cerrno>

#include "backend/local/local_file.h"

namespace fgds::backend {

int KillPrivileges(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  mode_t kill = S_ISUID;
  if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) {
    kill |= S_ISGID;
  }
  if ((st.st_mode & kill) == 0) return 0;
  return fchmod(fd, st.st_mode & 07777 & ~kill) == 0 ? 0 : -errno;
}

int PrivilegeKiller::Before(const FileIoRequest& request) {
  if (request.op != FileOp::kWrite ||
      (request.flags & kIoKillPrivileges) == 0) {
    return 0;
  }
  for (const auto& [file, result] : done_) {
    if (file == request.file) return result;
  }
  const int result = KillPrivileges(request.file->fd);
  done_.emplace_back(request.file, result);
  return result;
}

}  // namespace fgds::backend
