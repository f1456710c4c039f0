#include "tools/bench/system.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/flags.h"
#include "tools/bench/workers.h"

namespace fgds::bench {
namespace {

// Process-wide because a signal handler can reach nothing else; lock-free
// atomics are the only state a handler may safely touch.
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

void OnInterrupt(int sig) {
  g_signal.store(sig);
  g_interrupted.store(true);
}

absl::Status CheckDirectory(absl::string_view flag, const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return PosixError(absl::StrCat(flag, " ", path), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckMountDir(const std::string& path, bool require_fuse) {
  if (absl::Status s = CheckDirectory("--mount", path); !s.ok()) return s;
  if (!require_fuse) return absl::OkStatus();
  struct statfs fs;
  if (statfs(path.c_str(), &fs) != 0) {
    return PosixError(absl::StrCat("--mount ", path, ": statfs"), errno);
  }
  if (static_cast<uint64_t>(fs.f_type) != FUSE_SUPER_MAGIC) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--mount %s is not on a FUSE mount (file system type 0x%x, FUSE is "
        "0x%x); start one with `fgds mount --data DIR %s` first",
        path, static_cast<uint64_t>(fs.f_type), FUSE_SUPER_MAGIC, path));
  }
  return absl::OkStatus();
}

absl::Status CheckBackingDir(const std::string& path, uint64_t bytes_needed) {
  if (absl::Status s = CheckDirectory("--backing", path); !s.ok()) return s;
  if (access(path.c_str(), W_OK) != 0) {
    return PosixError(absl::StrCat("--backing ", path), errno);
  }
  struct statfs fs;
  if (statfs(path.c_str(), &fs) == 0 &&
      static_cast<uint64_t>(fs.f_type) == FUSE_SUPER_MAGIC) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backing ", path,
        " is on a FUSE mount; pass the directory the daemon serves"));
  }
  struct statvfs vfs;
  if (statvfs(path.c_str(), &vfs) != 0) {
    return PosixError(absl::StrCat("--backing ", path, ": statvfs"), errno);
  }
  const uint64_t free_bytes =
      static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
  if (free_bytes < bytes_needed) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("--backing %s has %.2f GB free; --size needs %.2f GB",
                        path, static_cast<double>(free_bytes) / 1e9,
                        static_cast<double>(bytes_needed) / 1e9));
  }
  return absl::OkStatus();
}

uint64_t EnvNumber(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? 0 : std::strtoull(text, nullptr, 0);
}

absl::Status DropPageCache() {
  // Dirty pages cannot be dropped; write them back first.
  sync();
  const char* kPath = "/proc/sys/vm/drop_caches";
  const int fd = open(kPath, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return PosixError(absl::StrCat("open ", kPath), errno);
  const ssize_t n = write(fd, "3\n", 2);
  const int error = errno;
  close(fd);
  if (n != 2) return PosixError(absl::StrCat("write ", kPath), error);
  return absl::OkStatus();
}

ScopedInterruptHandler::ScopedInterruptHandler() {
  g_interrupted.store(false);
  g_signal.store(0);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a blocked read returns EINTR and the loop sees the flag.
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

ScopedInterruptHandler::~ScopedInterruptHandler() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

const std::atomic<bool>& ScopedInterruptHandler::flag() const {
  return g_interrupted;
}

int ScopedInterruptHandler::signal_number() const { return g_signal.load(); }

}  // namespace fgds::bench
