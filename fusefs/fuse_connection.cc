#include "fusefs/fuse_connection.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace fgds::fusefs {

std::string FuseConnectionDir(unsigned major, unsigned minor) {
  return absl::StrCat("/sys/fs/fuse/connections/", (major << 20) | minor);
}

int AbortFuseConnection(unsigned major, unsigned minor) {
  const std::string path = FuseConnectionDir(major, minor) + "/abort";
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const int res = write(fd, "1", 1) == 1 ? 0 : -errno;
  close(fd);
  return res;
}

}  // namespace fgds::fusefs
