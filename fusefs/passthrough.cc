#include "fusefs/passthrough.h"

#include <fuse_lowlevel.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fgds::fusefs {

int PassthroughFiles::Open(void* request, uint64_t node, const void* file,
                           int fd, mode_t mode) {
  MutexLock lock(&mu_);
  NodeState& state = nodes_[node];
  bool passthrough;
  if (state.passthrough_files > 0) {
    passthrough = true;  // the kernel would refuse anything else
  } else if (state.daemon_files > 0) {
    passthrough = false;
  } else {
    passthrough = (mode & (S_ISUID | S_ISGID)) == 0;
  }
  if (passthrough && state.backing_id == 0) {
    const int id = open_backing_(request, fd);
    if (id > 0) {
      state.backing_id = id;
    } else {
      // Served by the daemon instead: slower, never wrong.
      last_error_ = absl::StrCat("registering a backing file failed: ",
                                 std::strerror(-id));
      passthrough = false;
    }
  }
  if (passthrough) {
    ++state.passthrough_files;
    passthrough_.insert(file);
    passthrough_opens_.fetch_add(1, std::memory_order_relaxed);
    return state.backing_id;
  }
  ++state.daemon_files;
  daemon_opens_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void PassthroughFiles::Release(void* request, uint64_t node, const void* file) {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  NodeState& state = it->second;
  if (passthrough_.erase(file) != 0) {
    if (--state.passthrough_files == 0) {
      // The kernel's open files hold the backing file themselves; the id
      // only lets new opens share it.
      close_backing_(request, state.backing_id);
      state.backing_id = 0;
    }
  } else if (state.daemon_files > 0) {
    --state.daemon_files;
  }
  if (state.passthrough_files == 0 && state.daemon_files == 0) {
    nodes_.erase(it);
  }
}

bool PassthroughFiles::HasPassthroughFiles(uint64_t node) const {
  MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  return it != nodes_.end() && it->second.passthrough_files > 0;
}

std::string PassthroughFiles::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

int OpenBackingWithoutFsetid(void* req, int fd) {
#ifdef FUSE_CAP_PASSTHROUGH
  // capset(2) changes the calling thread's capabilities only; the kernel
  // copies them into the backing id (the credentials its passthrough writes
  // run with) during the ioctl.
  // The thread's own capabilities, read once per thread: nothing else in
  // the daemon changes them for longer than a call (ScopedCredentials'
  // setfsuid only while it runs, and this function restores them).
  thread_local bool known = false;
  thread_local __user_cap_data_struct saved[_LINUX_CAPABILITY_U32S_3] = {};
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (!known) {
    if (syscall(SYS_capget, &header, saved) != 0) return -errno;
    known = true;
  }
  __user_cap_data_struct reduced[_LINUX_CAPABILITY_U32S_3];
  std::memcpy(reduced, saved, sizeof(reduced));
  reduced[CAP_TO_INDEX(CAP_FSETID)].effective &= ~CAP_TO_MASK(CAP_FSETID);
  if (syscall(SYS_capset, &header, reduced) != 0) return -errno;
  errno = 0;
  int id = fuse_passthrough_open(static_cast<fuse_req_t>(req), fd);
  const int err = errno;
  // Restoring cannot fail: the capability stays in the permitted set.
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  syscall(SYS_capset, &header, saved);
  if (id > 0) return id;
  return err != 0 ? -err : -EIO;
#else
  (void)req;
  (void)fd;
  return -EOPNOTSUPP;
#endif
}

void CloseBacking(void* req, int backing_id) {
#ifdef FUSE_CAP_PASSTHROUGH
  fuse_passthrough_close(static_cast<fuse_req_t>(req), backing_id);
#else
  (void)req;
  (void)backing_id;
#endif
}

}  // namespace fgds::fusefs
