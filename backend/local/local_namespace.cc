// LocalBackend: creation, lookup, attributes, links and renames.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "backend/local/creation_mode.h"
#include "backend/local/credentials.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"
#include "common/errno_status.h"
#include "common/io/inline_engine.h"

namespace fgds::backend {

std::string ProcFdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

absl::StatusOr<std::unique_ptr<LocalBackend>> LocalBackend::Create(
    const std::string& root_dir, const io::IoEngineOptions& engine_options) {
  int fd = open(root_dir.c_str(), O_PATH | O_DIRECTORY);
  if (fd < 0) return PosixError("open backing directory " + root_dir, errno);
  struct stat st;
  if (fstatat(fd, "", &st, AT_EMPTY_PATH) != 0) {
    int err = errno;
    close(fd);
    return PosixError("stat backing directory " + root_dir, err);
  }
  std::string fallback;
  auto engine = io::CreateIoEngine(engine_options, &fallback);
  return std::unique_ptr<LocalBackend>(
      new LocalBackend(fd, st, std::move(engine), std::move(fallback)));
}

LocalBackend::LocalBackend(int root_fd, const struct stat& root_stat,
                           std::unique_ptr<io::IoEngine> engine,
                           std::string fallback)
    : inodes_(root_fd, root_stat),
      root_dev_(root_stat.st_dev),
      root_close_is_noop_(CloseIsNoopOnFs(root_fd)),
      engine_(std::move(engine)),
      fallback_(std::move(fallback)) {}

LocalBackend::~LocalBackend() {
  // Drain first, while the backend is whole: the last completions of
  // usrbio I/O release the registered files' handles (Release, Forget).
  engine_.reset();
}

int LocalBackend::LookupEntry(int dir_fd, const char* name, Entry* out) {
  // Open first, then stat the descriptor: the attributes are then those of
  // the very inode we registered, even if the name is replaced meanwhile.
  int fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  if (fstatat(fd, "", &out->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  out->node = inodes_.Insert(fd, out->attr);
  // Too many nodes pin a descriptor (inode_table.h): the namespace must not
  // take every descriptor the daemon has.
  if (out->node == InodeTable::kNoNode) return -ENFILE;
  return 0;
}

int LocalBackend::Lookup(NodeId parent, const char* name, Entry* out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  return LookupEntry(dir.get(), name, out);
}

int LocalBackend::LookupCreated(int dir_fd, const char* name, bool is_dir,
                                Entry* out) {
  int ret = LookupEntry(dir_fd, name, out);
  // A create that cannot be reported must not stay half-done: the caller
  // gets the error, so nothing may be left under the name.
  if (ret != 0) unlinkat(dir_fd, name, is_dir ? AT_REMOVEDIR : 0);
  return ret;
}

void LocalBackend::Forget(NodeId node, uint64_t count) {
  inodes_.Forget(node, count);
}

int LocalBackend::GetAttr(NodeId node, struct stat* out) {
  PathFd fd = inodes_.Open(inodes_.Get(node));
  if (!fd.ok()) return fd.error();
  if (fstatat(fd.get(), "", out, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return -errno;
  }
  return 0;
}

int LocalBackend::SetAttr(NodeId node, const SetAttrRequest& request,
                          struct stat* out) {
  LocalInode& inode = inodes_.Get(node);
  PathFd fd = inodes_.Open(inode);
  if (!fd.ok()) return fd.error();
  const unsigned valid = request.valid;
  const struct stat& attr = request.attr;
  const std::string path = ProcFdPath(fd.get());
  int file_fd = request.file != nullptr ? request.file->fd : -1;

  if (valid & kSetMode) {
    if (inode.type == S_IFLNK) return -EOPNOTSUPP;
    int res = file_fd >= 0 ? fchmod(file_fd, attr.st_mode)
                           : chmod(path.c_str(), attr.st_mode);
    if (res != 0) return -errno;
  }
  if (valid & (kSetUid | kSetGid)) {
    uid_t uid = (valid & kSetUid) ? attr.st_uid : static_cast<uid_t>(-1);
    gid_t gid = (valid & kSetGid) ? attr.st_gid : static_cast<gid_t>(-1);
    if (fchownat(fd.get(), "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
      return -errno;
    }
  }
  if (valid & kSetSize) {
    int res = file_fd >= 0 ? ftruncate(file_fd, attr.st_size)
                           : truncate(path.c_str(), attr.st_size);
    if (res != 0) return -errno;
  }
  if (valid & (kSetAtime | kSetMtime | kSetAtimeNow | kSetMtimeNow)) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    if (valid & kSetAtimeNow) {
      times[0].tv_nsec = UTIME_NOW;
    } else if (valid & kSetAtime) {
      times[0] = attr.st_atim;
    }
    if (valid & kSetMtimeNow) {
      times[1].tv_nsec = UTIME_NOW;
    } else if (valid & kSetMtime) {
      times[1] = attr.st_mtim;
    }
    int res;
    if (file_fd >= 0) {
      res = futimens(file_fd, times);
    } else if (inode.type == S_IFLNK) {
      // The /proc link would be followed to the target; the descriptor
      // itself names the symlink (AT_EMPTY_PATH, Linux 5.8+).
      res = utimensat(fd.get(), "", times, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
    } else {
      res = utimensat(AT_FDCWD, path.c_str(), times, 0);
    }
    if (res != 0) return -errno;
  }
  // The descriptor this call already holds: no second open of the node.
  if (fstatat(fd.get(), "", out, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0) {
    return -errno;
  }
  return 0;
}

int LocalBackend::ReadLink(NodeId node, std::string* target) {
  PathFd fd = inodes_.Open(inodes_.Get(node));
  if (!fd.ok()) return fd.error();
  char buf[PATH_MAX + 1];
  ssize_t n = readlinkat(fd.get(), "", buf, sizeof(buf));
  if (n < 0) return -errno;
  if (static_cast<size_t>(n) >= sizeof(buf)) return -ENAMETOOLONG;
  target->assign(buf, static_cast<size_t>(n));
  return 0;
}

int LocalBackend::MkNod(const Caller& caller, NodeId parent, const char* name,
                        mode_t mode, dev_t rdev, Entry* out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  {
    ScopedCredentials creds(caller);
    if (creds.error() != 0) return creds.error();
    if (mknodat(dir.get(), name, CreationMode(dir.get(), mode, caller.umask),
                rdev) != 0) {
      return -errno;
    }
  }
  return LookupCreated(dir.get(), name, /*is_dir=*/false, out);
}

int LocalBackend::MkDir(const Caller& caller, NodeId parent, const char* name,
                        mode_t mode, Entry* out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  {
    ScopedCredentials creds(caller);
    if (creds.error() != 0) return creds.error();
    if (mkdirat(dir.get(), name, CreationMode(dir.get(), mode, caller.umask)) !=
        0) {
      return -errno;
    }
  }
  return LookupCreated(dir.get(), name, /*is_dir=*/true, out);
}

int LocalBackend::SymLink(const Caller& caller, const char* target,
                          NodeId parent, const char* name, Entry* out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  {
    ScopedCredentials creds(caller);
    if (creds.error() != 0) return creds.error();
    if (symlinkat(target, dir.get(), name) != 0) return -errno;
  }
  return LookupCreated(dir.get(), name, /*is_dir=*/false, out);
}

int LocalBackend::Link(NodeId node, NodeId new_parent, const char* new_name,
                       Entry* out) {
  PathFd inode = inodes_.Open(inodes_.Get(node));
  if (!inode.ok()) return inode.error();
  PathFd dir = inodes_.Open(inodes_.Get(new_parent));
  if (!dir.ok()) return dir.error();
  // linkat(fd, "", ..., AT_EMPTY_PATH) would need CAP_DAC_READ_SEARCH; the
  // /proc link works for any owner of the descriptor.
  if (linkat(AT_FDCWD, ProcFdPath(inode.get()).c_str(), dir.get(), new_name,
             AT_SYMLINK_FOLLOW) != 0) {
    return -errno;
  }
  return LookupCreated(dir.get(), new_name, /*is_dir=*/false, out);
}

int LocalBackend::Unlink(NodeId parent, const char* name) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  // What the name holds, kept across the unlink for KeepUnlinked.
  int victim = openat(dir.get(), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (unlinkat(dir.get(), name, 0) != 0) {
    int err = errno;
    if (victim >= 0) close(victim);
    return -err;
  }
  if (victim >= 0) inodes_.KeepUnlinked(victim);
  return 0;
}

int LocalBackend::RmDir(NodeId parent, const char* name) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  if (unlinkat(dir.get(), name, AT_REMOVEDIR) != 0) return -errno;
  return 0;
}

int LocalBackend::Rename(NodeId parent, const char* name, NodeId new_parent,
                         const char* new_name, unsigned flags) {
  PathFd from = inodes_.Open(inodes_.Get(parent));
  if (!from.ok()) return from.error();
  // Most renames stay in one directory: its descriptor serves both sides.
  PathFd other = new_parent == parent ? PathFd(-EBADF, /*owned=*/false)
                                      : inodes_.Open(inodes_.Get(new_parent));
  if (new_parent != parent && !other.ok()) return other.error();
  const int to = new_parent == parent ? from.get() : other.get();
  // A file the rename replaces loses a name, like an unlinked one.
  int victim = (flags & RENAME_EXCHANGE)
                   ? -1
                   : openat(to, new_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (renameat2(from.get(), name, to, new_name, flags) != 0) {
    int err = errno;
    if (victim >= 0) close(victim);
    return -err;
  }
  if (victim >= 0) inodes_.KeepUnlinked(victim);
  return 0;
}

int LocalBackend::StatFs(NodeId node, struct statvfs* out) {
  PathFd fd = inodes_.Open(inodes_.Get(node));
  if (!fd.ok()) return fd.error();
  if (fstatvfs(fd.get(), out) != 0) return -errno;
  return 0;
}

}  // namespace fgds::backend
