// LocalBackend: open files and the data calls without a buffer.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>

#include "backend/local/creation_mode.h"
#include "backend/local/credentials.h"
#include "backend/local/local_backend.h"
#include "backend/local/local_file.h"
#include "common/kmod/storage_device.h"

namespace fgds::backend {

namespace {

// An O_DIRECT descriptor of the file `fd` is open on, with its access mode.
int OpenDirectTwin(int fd) {
  int flags = fcntl(fd, F_GETFL);
  // An appending handle writes where the file ends, not where a request
  // says: a twin would write elsewhere.
  if (flags < 0 || (flags & O_APPEND)) return -1;
  int twin = open(ProcFdPath(fd).c_str(),
                  (flags & O_ACCMODE) | O_DIRECT | O_CLOEXEC | O_NOCTTY);
  return twin >= 0 ? twin : -1;
}

}  // namespace

File::File(int fd_in, const struct stat& st, bool close_is_noop_in,
           LocalInode& inode_in, NodeId node_in, bool keep_cache_in,
           bool want_twin, bool holds_lookup_in)
    : fd(fd_in),
      inode(inode_in),
      node(node_in),
      keep_cache(keep_cache_in),
      holds_lookup(holds_lookup_in),
      close_is_noop(close_is_noop_in),
      storage_device(kmod::StorageDeviceOf(st)),
      want_twin_(want_twin) {}

File::~File() {
  if (int twin = direct_fd_.load(); twin >= 0) close(twin);
  // Not close(fd): where a ring worker's fixed file table holds the open
  // file, the descriptor stays open until every table let go and is then
  // closed off the ring workers, so that the last reference (for an
  // unlinked file, its page cache's eviction) is never released on a
  // worker (registration_key.h). Otherwise closed here, as before (on the
  // release thread if this is a ring worker).
  registration_key.CloseWhenUnregistered(fd);
}

int File::direct_fd() const {
  int twin = direct_fd_.load(std::memory_order_acquire);
  if (twin != kTwinNotOpened) return twin;
  twin = want_twin_ ? OpenDirectTwin(fd) : -1;
  int expected = kTwinNotOpened;
  if (direct_fd_.compare_exchange_strong(expected, twin,
                                         std::memory_order_acq_rel)) {
    return twin;
  }
  // Another thread opened it first: use that one.
  if (twin >= 0) close(twin);
  return expected;
}

namespace {

// Open flags for the handle's main descriptor, and whether it gets an
// O_DIRECT twin: writable handles do (whole-page writes skip a second
// cached copy of what the mount's cache holds), and so do openers that
// asked for O_DIRECT (their aligned reads too). The main descriptor itself
// is never O_DIRECT (local_file.h says why).
int MainFlags(int flags, bool* want_twin) {
  *want_twin = (flags & O_DIRECT) || (flags & O_ACCMODE) != O_RDONLY;
  return flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_DIRECT);
}

// Opens `name` in `dir_fd`, creating it with `mode` if it does not exist
// (only then when `exclusive`); *created tells whether this call made it.
// O_EXCL first, so that a failed create knows whether the file is its own
// to remove again. Returns the descriptor or -errno.
int OpenOrCreate(int dir_fd, const char* name, int open_flags, mode_t mode,
                 bool exclusive, bool* created) {
  // A name that comes and goes between the two attempts: try again, a few
  // times, as the kernel does for O_CREAT.
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = openat(dir_fd, name, open_flags | O_CREAT | O_EXCL, mode);
    if (fd >= 0) {
      *created = true;
      return fd;
    }
    if (errno != EEXIST || exclusive) return -errno;
    fd = openat(dir_fd, name, open_flags);
    if (fd >= 0) {
      *created = false;
      return fd;
    }
    if (errno != ENOENT) return -errno;
  }
  return -EAGAIN;
}

}  // namespace

// Whether closing a descriptor on `fd`'s filesystem does nothing but free
// it: the local filesystems below have no flush method, so a close neither
// writes back nor reports an error. Network filesystems (NFS writes back and
// reports at close) and anything unknown keep their Flush.
bool LocalBackend::CloseIsNoopOnFs(int fd) {
  struct statfs st;
  if (fstatfs(fd, &st) != 0) return false;
  switch (static_cast<unsigned long>(st.f_type)) {
    case 0xEF53:      // ext2, ext3, ext4
    case 0x58465342:  // xfs
    case 0x01021994:  // tmpfs
      return true;
    default:
      return false;
  }
}

bool LocalBackend::CloseIsNoop(int fd, const struct stat& st) const {
  // Files of the backing root's filesystem (nearly all) take the answer
  // found at start: the root descriptor keeps that filesystem, and so its
  // device number, from going away, so no other filesystem can have that
  // number meanwhile. Others (mounts below the root) ask each time.
  if (st.st_dev == root_dev_) return root_close_is_noop_;
  return CloseIsNoopOnFs(fd);
}

bool LocalBackend::RememberCacheState(LocalInode& inode,
                                      const struct stat& st) {
  MutexLock lock(&inode.cache_mu);
  bool same = inode.cache_known &&
              inode.cache_mtime.tv_sec == st.st_mtim.tv_sec &&
              inode.cache_mtime.tv_nsec == st.st_mtim.tv_nsec &&
              inode.cache_size == st.st_size;
  inode.cache_known = true;
  inode.cache_mtime = st.st_mtim;
  inode.cache_size = st.st_size;
  return same;
}

int LocalBackend::ReopenNode(LocalInode& inode, int flags) {
  PathFd path = inodes_.Open(inode);
  if (!path.ok()) return path.error();
  // O_PATH descriptors cannot do I/O: reopen the inode through /proc. The
  // name in the backing directory may have changed; the inode has not.
  int fd = open(ProcFdPath(path.get()).c_str(), flags);
  return fd >= 0 ? fd : -errno;
}

int LocalBackend::Open(NodeId node, int flags, File** out) {
  LocalInode& inode = inodes_.Get(node);
  bool twin;
  int fd = ReopenNode(inode, MainFlags(flags, &twin));
  if (fd < 0) return fd;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  bool keep = RememberCacheState(inode, st);
  *out = new File(fd, st, CloseIsNoop(fd, st), inode, node, keep, twin,
                  /*holds_lookup=*/false);
  inodes_.FileOpened(inode, fd);
  return 0;
}

int LocalBackend::Create(const Caller& caller, NodeId parent, const char* name,
                         mode_t mode, int flags, Entry* entry, File** out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  bool twin;
  const int open_flags = MainFlags(flags, &twin);
  int fd;
  bool created = false;
  {
    ScopedCredentials creds(caller);
    if (creds.error() != 0) return creds.error();
    fd = OpenOrCreate(dir.get(), name, open_flags,
                      CreationMode(dir.get(), mode, caller.umask),
                      flags & O_EXCL, &created);
    if (fd < 0) return fd;
  }
  // Register the inode we opened, not whatever the name points to by now.
  int path_fd = open(ProcFdPath(fd).c_str(), O_PATH | O_CLOEXEC);
  if (path_fd < 0 || fstat(fd, &entry->attr) != 0) {
    int err = errno;
    if (path_fd >= 0) close(path_fd);
    // No half-done create: the caller is told it failed, so the file it
    // would have created must not be there (a retry with O_EXCL would get
    // EEXIST).
    if (created) unlinkat(dir.get(), name, 0);
    close(fd);
    return -err;
  }
  // The O_PATH descriptor also serves as the open pin (InsertOpened).
  entry->node = inodes_.InsertOpened(path_fd, entry->attr);
  if (entry->node == InodeTable::kNoNode) {
    // Refused by the bound on pinned nodes (inode_table.h), path_fd
    // closed: undone as any failed create.
    if (created) unlinkat(dir.get(), name, 0);
    close(fd);
    return -ENFILE;
  }
  LocalInode& inode = inodes_.Get(entry->node);
  // The stat just taken is the new file's state: no second fstat.
  RememberCacheState(inode, entry->attr);
  *out = new File(fd, entry->attr, CloseIsNoop(fd, entry->attr), inode,
                  entry->node, false, twin, /*holds_lookup=*/false);
  return 0;
}

int LocalBackend::TmpFile(const Caller& caller, NodeId parent, mode_t mode,
                          int flags, Entry* entry, File** out) {
  PathFd dir = inodes_.Open(inodes_.Get(parent));
  if (!dir.ok()) return dir.error();
  bool twin;
  // O_TMPFILE must come with write access; O_EXCL (never linkable) is
  // kept. The kernel checked the rest.
  const int open_flags = (MainFlags(flags, &twin) & ~O_TMPFILE) |
                         (flags & O_EXCL) | O_TMPFILE | O_CLOEXEC;
  int fd;
  {
    ScopedCredentials creds(caller);
    if (creds.error() != 0) return creds.error();
    fd = openat(dir.get(), ".", open_flags,
                CreationMode(dir.get(), mode, caller.umask));
    // EISDIR/EOPNOTSUPP: a kernel or filesystem without O_TMPFILE.
    if (fd < 0) return errno == EISDIR ? -EOPNOTSUPP : -errno;
  }
  int path_fd = open(ProcFdPath(fd).c_str(), O_PATH | O_CLOEXEC);
  if (path_fd < 0 || fstat(fd, &entry->attr) != 0) {
    int err = errno;
    if (path_fd >= 0) close(path_fd);
    close(fd);  // nothing is left behind: the file has no name
    return -err;
  }
  // Pinned while open (InsertOpened): a handle of a file without a name
  // may not open again (inode_table.h), and linkat needs it.
  entry->node = inodes_.InsertOpened(path_fd, entry->attr);
  if (entry->node == InodeTable::kNoNode) {
    close(fd);  // refused by the bound on pinned nodes; nothing has a name
    return -ENFILE;
  }
  LocalInode& inode = inodes_.Get(entry->node);
  RememberCacheState(inode, entry->attr);
  *out = new File(fd, entry->attr, CloseIsNoop(fd, entry->attr), inode,
                  entry->node, false, twin, /*holds_lookup=*/false);
  return 0;
}

int LocalBackend::Flush(File* file) {
  // Closing a duplicate gives the backing filesystem its close-time work
  // (e.g. NFS writes back) without closing our handle.
  int fd = dup(file->fd);
  if (fd < 0) return -errno;
  return close(fd) == 0 ? 0 : -errno;
}

bool LocalBackend::NeedsFlush(File* file) { return !file->close_is_noop; }

void LocalBackend::Release(File* file) {
  // Our own writes changed mtime and size; record them so the next open
  // keeps the kernel's (coherent) cache. Not for usrbio handles: their
  // writes went past the mount, whose cache the next open must drop.
  // The same stat tells FileClosed whether the file still has a name
  // (the pin it may close is of the same inode): one fstat, not two.
  long nlink = -1;
  if (!file->holds_lookup) {
    struct stat st;
    if (fstat(file->fd, &st) == 0) {
      RememberCacheState(file->inode, st);
      nlink = static_cast<long>(st.st_nlink);
    }
  }
  const bool forget = file->holds_lookup;
  const NodeId node = file->node;
  inodes_.FileClosed(file->inode, nlink);
  delete file;
  if (forget) inodes_.Forget(node, 1);
}

int LocalBackend::Fsync(File* file, bool datasync) {
  int res = datasync ? fdatasync(file->fd) : fsync(file->fd);
  return res == 0 ? 0 : -errno;
}

int LocalBackend::Fallocate(File* file, int mode, off_t offset, off_t length) {
  return fallocate(file->fd, mode, offset, length) == 0 ? 0 : -errno;
}

ssize_t LocalBackend::CopyFileRange(File* in, off_t in_offset, File* out,
                                    off_t out_offset, size_t len,
                                    unsigned flags) {
  loff_t in_off = in_offset;
  loff_t out_off = out_offset;
  ssize_t n = copy_file_range(in->fd, &in_off, out->fd, &out_off, len, flags);
  return n >= 0 ? n : -errno;
}

off_t LocalBackend::Lseek(File* file, off_t offset, int whence) {
  off_t res = lseek(file->fd, offset, whence);
  return res >= 0 ? res : -errno;
}

bool LocalBackend::KeepCache(File* file) { return file->keep_cache; }

NodeId LocalBackend::NodeOf(File* file) { return file->node; }

int LocalBackend::PassthroughFd(File* file) { return file->fd; }

}  // namespace fgds::backend
