#include "fusefs/caller_groups.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <memory>

namespace fgds::fusefs {
namespace {

// The open status files of one daemon thread, replaced round-robin.
class StatusFiles {
 public:
  StatusFiles() { slots_.fill(Slot{}); }
  ~StatusFiles() {
    for (Slot& slot : slots_) {
      if (slot.fd >= 0) close(slot.fd);
    }
  }
  StatusFiles(const StatusFiles&) = delete;
  StatusFiles& operator=(const StatusFiles&) = delete;

  // The open file of `tid`, or -1.
  int Find(pid_t tid) const {
    for (const Slot& slot : slots_) {
      if (slot.fd >= 0 && slot.tid == tid) return slot.fd;
    }
    return -1;
  }
  // Opens `tid`'s status file and keeps it in place of the oldest; returns
  // the descriptor or -errno.
  int Open(pid_t tid) {
    Drop(tid);
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
                  static_cast<int>(tid), static_cast<int>(tid));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    // ENOENT: no such thread (as a read of a stale file says).
    if (fd < 0) return errno == ENOENT ? -ESRCH : -errno;
    Slot& slot = slots_[next_];
    next_ = (next_ + 1) % slots_.size();
    if (slot.fd >= 0) close(slot.fd);
    slot = Slot{tid, fd};
    return fd;
  }
  // Closes `tid`'s file if one is kept.
  void Drop(pid_t tid) {
    for (Slot& slot : slots_) {
      if (slot.fd >= 0 && slot.tid == tid) {
        close(slot.fd);
        slot = Slot{};
      }
    }
  }

 private:
  struct Slot {
    pid_t tid = 0;
    int fd = -1;
  };
  std::array<Slot, kMaxOpenPerThread> slots_;
  size_t next_ = 0;
};

thread_local StatusFiles status_files;

// Reads the whole of `fd`'s file from offset 0 (the kernel writes it
// afresh) and parses its groups. -errno of the read, or -EIO.
int ReadGroups(int fd, std::vector<gid_t>* groups) {
  // The Groups line comes early (after the ids), so one small read holds
  // it unless the caller has hundreds of groups; then once more with room
  // for what NGROUPS_MAX (65536) groups of 10 digits take.
  char small[4096];
  ssize_t n = pread(fd, small, sizeof(small), 0);
  if (n < 0) return -errno;
  if (ParseStatusGroups(std::string_view(small, static_cast<size_t>(n)),
                        groups)) {
    return 0;
  }
  if (static_cast<size_t>(n) < sizeof(small)) return -EIO;  // no such line
  constexpr size_t kBig = 1024 * 1024;
  std::unique_ptr<char[]> big(new char[kBig]);
  n = pread(fd, big.get(), kBig, 0);
  if (n < 0) return -errno;
  if (ParseStatusGroups(std::string_view(big.get(), static_cast<size_t>(n)),
                        groups)) {
    return 0;
  }
  return -EIO;
}

}  // namespace

bool ParseStatusGroups(std::string_view status, std::vector<gid_t>* groups) {
  groups->clear();
  constexpr std::string_view kKey = "Groups:";
  size_t at = 0;
  if (!status.starts_with(kKey)) {
    at = status.find("\nGroups:");
    if (at == std::string_view::npos) return false;
    ++at;  // past the newline
  }
  std::string_view rest = status.substr(at + kKey.size());
  const size_t end = rest.find('\n');
  // A line cut off by the buffer's end: the caller reads more.
  if (end == std::string_view::npos) return false;
  rest = rest.substr(0, end);
  const char* p = rest.data();
  const char* const last = rest.data() + rest.size();
  while (true) {
    while (p < last && (*p == ' ' || *p == '\t')) ++p;
    if (p == last) return true;
    gid_t gid = 0;
    auto [next, ec] = std::from_chars(p, last, gid);
    if (ec != std::errc() || next == p) {
      groups->clear();
      return false;
    }
    groups->push_back(gid);
    p = next;
  }
}

int ThreadGroups(pid_t tid, std::vector<gid_t>* groups) {
  groups->clear();
  if (tid <= 0) return -ESRCH;
  int fd = status_files.Find(tid);
  if (fd >= 0) {
    int res = ReadGroups(fd, groups);
    if (res == 0) return 0;
    // ESRCH: the thread that file was opened for is gone, and the number
    // may be another thread's by now: open it again. Any other error the
    // same way, once.
    status_files.Drop(tid);
  }
  fd = status_files.Open(tid);
  if (fd < 0) return fd;
  int res = ReadGroups(fd, groups);
  if (res != 0) {
    status_files.Drop(tid);
    groups->clear();
  }
  return res;
}

}  // namespace fgds::fusefs
