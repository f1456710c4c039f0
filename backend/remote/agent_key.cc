#include "backend/remote/agent_key.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace fgds::remote {

absl::StatusOr<AgentKey> LoadAgentKey(const std::string& path) {
  // O_NOFOLLOW|O_NONBLOCK: a key path that is a symlink or a FIFO is refused
  // rather than followed or waited on.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return PosixError(absl::StrCat("key file ", path), errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return PosixError(absl::StrCat("key file ", path), err);
  }
  auto refuse = [&](absl::string_view why) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", path, ": ", why));
  };
  if (!S_ISREG(st.st_mode)) return refuse("not a regular file");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return refuse(
        "readable or writable by others than its owner (chmod 600 it)");
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return refuse("owned by another user");
  }
  if (st.st_size > static_cast<off_t>(kMaxAgentKeyBytes) + 1) {
    return refuse(absl::StrCat("longer than ", kMaxAgentKeyBytes, " bytes"));
  }
  std::string secret(kMaxAgentKeyBytes + 2, '\0');
  size_t got = 0;
  while (got < secret.size()) {
    ssize_t n = read(fd, secret.data() + got, secret.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return PosixError(absl::StrCat("key file ", path), err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  secret.resize(got);
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (secret.size() > kMaxAgentKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key file ", path, ": longer than ", kMaxAgentKeyBytes, " bytes"));
  }
  if (secret.size() < kMinAgentKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", path, ": ", secret.size(),
                     " bytes of key; at least ", kMinAgentKeyBytes,
                     " are needed (head -c 48 /dev/urandom | base64 > FILE)"));
  }
  return AgentKey{std::move(secret)};
}

}  // namespace fgds::remote
