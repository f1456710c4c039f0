#include "backend/local/inode_table.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/log.h"

namespace fgds::backend {

static_assert(sizeof(NodeId) >= sizeof(LocalInode*),
              "NodeId must be able to hold a LocalInode pointer");

namespace {

struct HandleBuffer {
  file_handle header;
  unsigned char bytes[MAX_HANDLE_SZ];
};

// `handle` back as the kernel's struct, for open_by_handle_at.
void ToKernel(const FileHandle& handle, HandleBuffer* out) {
  out->header.handle_bytes = static_cast<unsigned>(handle.bytes.size());
  out->header.handle_type = handle.type;
  memcpy(out->header.f_handle, handle.bytes.data(), handle.bytes.size());
}

// Half the descriptors the daemon may hold: the other half stays for open
// files (two each), usrbio and the daemon's own.
size_t DefaultMaxPinned() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 ||
      limit.rlim_cur == RLIM_INFINITY) {
    return 512;
  }
  return std::max<size_t>(static_cast<size_t>(limit.rlim_cur / 2), 16);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

// At most one warning about the bound this often.
constexpr uint64_t kWarningGapNs = 10ull * 1000000000u;

}  // namespace

PathFd::~PathFd() {
  if (owned_ && fd_ >= 0) close(fd_);
}

InodeTable::InodeTable(int root_fd, const struct stat& root_stat, Reach reach,
                       size_t max_pinned)
    : root_(root_stat.st_dev, root_stat.st_ino, root_stat.st_mode & S_IFMT,
            root_fd, FileHandle{}, -1),
      max_pinned_(max_pinned != 0 ? max_pinned : DefaultMaxPinned()),
      max_cached_dirs_(std::max<size_t>(max_pinned_ / 4, 1)) {
  root_.nlookup = 1;  // never dropped
  if (reach != Reach::kHandles) return;
  // Opening a handle needs CAP_DAC_READ_SEARCH (the root daemon has it)
  // and a filesystem that can decode handles: try both once, on the root.
  FileHandle handle = HandleOf(root_fd);
  if (handle.bytes.empty()) return;
  MutexLock lock(&mu_);
  const int mount_fd = MountFd(handle.mount_id, root_fd);
  if (mount_fd < 0) return;
  HandleBuffer kernel;
  ToKernel(handle, &kernel);
  int fd = open_by_handle_at(mount_fd, &kernel.header, O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  close(fd);
  uses_handles_ = true;
}

InodeTable::~InodeTable() {
  MutexLock lock(&mu_);
  for (auto& [key, inode] : inodes_) {
    if (inode->pinned_fd >= 0) close(inode->pinned_fd);
    if (int fd = inode->dir_fd.load(); fd >= 0) close(fd);
    {
      MutexLock open_lock(&inode->open_mu);
      if (inode->open_fd >= 0) close(inode->open_fd);
    }
    delete inode;
  }
  for (auto& [mount_id, fd] : mount_fds_) {
    if (fd >= 0) close(fd);
  }
  close(root_.pinned_fd);
}

LocalInode& InodeTable::Get(NodeId node) {
  if (node == kRootNode) return root_;
  if (node < kFirstNodeId) {
    std::fprintf(stderr, "fgds: INTERNAL ERROR: unknown node id %llu\n",
                 static_cast<unsigned long long>(node));
    std::abort();
  }
  return *reinterpret_cast<LocalInode*>(node);
}

FileHandle InodeTable::HandleOf(int fd) {
  HandleBuffer kernel;
  kernel.header.handle_bytes = sizeof(kernel.bytes);
  int mount_id = 0;
  if (name_to_handle_at(fd, "", &kernel.header, &mount_id, AT_EMPTY_PATH) !=
      0) {
    return {};  // EOPNOTSUPP: a filesystem without handles
  }
  return FileHandle{
      kernel.header.handle_type, mount_id,
      std::string(reinterpret_cast<const char*>(kernel.header.f_handle),
                  kernel.header.handle_bytes)};
}

int InodeTable::MountFd(int mount_id, int fd) {
  auto [it, inserted] = mount_fds_.try_emplace(mount_id, -1);
  if (inserted) {
    // open_by_handle_at refuses an O_PATH descriptor as its mount: open
    // the directory for reading (the first node met on a mount is its root
    // directory; a file bind-mounted on its own gets none, and is pinned).
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    it->second = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  return it->second;
}

PathFd InodeTable::Open(LocalInode& inode) {
  if (inode.pinned_fd >= 0) return PathFd(inode.pinned_fd, /*owned=*/false);
  {
    // An open file's descriptor outlives its names; the handle may not.
    MutexLock lock(&inode.open_mu);
    if (inode.open_fd >= 0) {
      int fd = fcntl(inode.open_fd, F_DUPFD_CLOEXEC, 0);
      return PathFd(fd >= 0 ? fd : -errno, /*owned=*/true);
    }
  }
  const bool is_dir = inode.type == S_IFDIR;
  if (is_dir) {
    if (int fd = inode.dir_fd.load(std::memory_order_acquire); fd >= 0) {
      return PathFd(fd, /*owned=*/false);
    }
  }
  HandleBuffer kernel;
  ToKernel(inode.handle, &kernel);
  int fd =
      open_by_handle_at(inode.mount_fd, &kernel.header, O_PATH | O_CLOEXEC);
  if (fd >= 0 && is_dir && KeepDirFd(inode, fd)) {
    return PathFd(fd, /*owned=*/false);
  }
  if (fd >= 0) return PathFd(fd, /*owned=*/true);
  // ESTALE: the file was removed in the backing directory. For the caller
  // that is a name that no longer exists, as it would be locally.
  return PathFd(errno == ESTALE ? -ENOENT : -errno, /*owned=*/true);
}

bool InodeTable::KeepDirFd(LocalInode& inode, int fd) {
  if (cached_dirs_.fetch_add(1, std::memory_order_relaxed) >=
      max_cached_dirs_) {
    cached_dirs_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  int none = -1;
  if (inode.dir_fd.compare_exchange_strong(none, fd,
                                           std::memory_order_acq_rel)) {
    return true;
  }
  // Another thread kept its descriptor first; ours is the caller's.
  cached_dirs_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

NodeId InodeTable::Register(int fd, const struct stat& st, bool* fd_taken) {
  *fd_taken = false;
  Key key{st.st_dev, st.st_ino};
  FileHandle handle;
  if (uses_handles_) handle = HandleOf(fd);
  MutexLock lock(&mu_);
  if (key == Key{root_.dev, root_.ino}) {
    // The root reached by another name (e.g. a bind mount loop).
    return kRootNode;
  }
  auto [it, inserted] = inodes_.try_emplace(key, nullptr);
  // The same number with another handle is a newer file that reuses the
  // number of one removed in the backing directory: it gets its own node,
  // and the older node (still known to the kernel) leaves the map.
  if (!inserted && it->second->handle == handle) {
    ++it->second->nlookup;
    return reinterpret_cast<NodeId>(it->second);
  }
  int mount_fd = handle.bytes.empty() ? -1 : MountFd(handle.mount_id, fd);
  int pinned_fd = -1;
  if (mount_fd < 0) {
    if (pinned_ >= max_pinned_) {
      // Nothing changed: the key entry just made (if any) goes again.
      if (inserted) inodes_.erase(it);
      WarnPinnedFull();
      return kNoNode;
    }
    pinned_fd = fd;  // no handle: the descriptor is the only way back
    *fd_taken = true;
    handle = {};
    ++pinned_;
  }
  auto* inode = new LocalInode(st.st_dev, st.st_ino, st.st_mode & S_IFMT,
                               pinned_fd, std::move(handle), mount_fd);
  inode->nlookup = 1;
  it->second = inode;
  return reinterpret_cast<NodeId>(inode);
}

NodeId InodeTable::Insert(int fd, const struct stat& st) {
  bool fd_taken;
  NodeId node = Register(fd, st, &fd_taken);
  if (!fd_taken) close(fd);
  return node;
}

NodeId InodeTable::InsertOpened(int path_fd, const struct stat& st) {
  bool fd_taken;
  NodeId node = Register(path_fd, st, &fd_taken);
  if (fd_taken) return node;  // pinned: FileOpened has nothing to do
  if (node != kNoNode) {
    LocalInode& inode = Get(node);
    if (inode.pinned_fd < 0) {
      MutexLock lock(&inode.open_mu);
      // As FileOpened, with the descriptor we already have.
      if (inode.open_files++ == 0 && inode.open_fd < 0) {
        inode.open_fd = path_fd;
        return node;
      }
    }
  }
  close(path_fd);
  return node;
}

void InodeTable::Forget(NodeId node, uint64_t count) {
  if (node == kRootNode) return;
  LocalInode& inode = Get(node);
  MutexLock lock(&mu_);
  if (count > inode.nlookup) {
    std::fprintf(stderr, "fgds: INTERNAL ERROR: forget %llu > nlookup %llu\n",
                 static_cast<unsigned long long>(count),
                 static_cast<unsigned long long>(inode.nlookup));
    std::abort();
  }
  inode.nlookup -= count;
  if (inode.nlookup > 0) return;
  auto it = inodes_.find(Key{inode.dev, inode.ino});
  // A newer file with the same number may own the key by now.
  if (it != inodes_.end() && it->second == &inode) inodes_.erase(it);
  if (inode.pinned_fd >= 0) {
    close(inode.pinned_fd);
    --pinned_;
  }
  if (int fd = inode.dir_fd.load(std::memory_order_acquire); fd >= 0) {
    close(fd);
    cached_dirs_.fetch_sub(1, std::memory_order_relaxed);
  }
  {
    MutexLock open_lock(&inode.open_mu);
    if (inode.open_fd >= 0) close(inode.open_fd);
  }
  delete &inode;
}

size_t InodeTable::pinned() {
  MutexLock lock(&mu_);
  return pinned_;
}

void InodeTable::WarnPinnedFull() {
  const uint64_t now = MonotonicNs();
  if (last_pin_warning_ns_ != 0 && now - last_pin_warning_ns_ < kWarningGapNs) {
    return;
  }
  last_pin_warning_ns_ = now;
  LogWarning(
      "%zu nodes each hold a descriptor (the backing filesystem has no file "
      "handles, or the daemon cannot open them): refusing new ones with "
      "ENFILE until the kernel forgets some; the limit is half the daemon's "
      "descriptor limit (RLIMIT_NOFILE, e.g. systemd's LimitNOFILE)",
      pinned_);
}

void InodeTable::Acquire(NodeId node) {
  if (node == kRootNode) return;
  LocalInode& inode = Get(node);
  MutexLock lock(&mu_);
  ++inode.nlookup;
}

void InodeTable::FileOpened(LocalInode& inode, int fd) {
  if (inode.pinned_fd >= 0) return;
  MutexLock lock(&inode.open_mu);
  // A descriptor may still be held from an earlier open (see FileClosed).
  if (inode.open_files++ > 0 || inode.open_fd >= 0) return;
  // /proc reopens the very inode `fd` is open on. Failing (EMFILE) only
  // loses access to the file after an unlink on filesystems whose handles
  // need a name.
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  inode.open_fd = open(path, O_PATH | O_CLOEXEC);
}

void InodeTable::FileClosed(LocalInode& inode, long nlink) {
  if (inode.pinned_fd >= 0) return;
  MutexLock lock(&inode.open_mu);
  if (--inode.open_files > 0 || inode.open_fd < 0) return;
  // An unlinked file lives on while the kernel knows its node, as it would
  // locally: the kernel may still set its times or size after the last
  // close (writeback), and the handle no longer opens it. The kernel
  // forgets such a node soon (nothing names it), and Forget closes this.
  if (nlink < 0) {
    struct stat st;
    nlink = fstat(inode.open_fd, &st) == 0 ? static_cast<long>(st.st_nlink) : 1;
  }
  if (nlink == 0) return;
  close(inode.open_fd);
  inode.open_fd = -1;
}

void InodeTable::KeepUnlinked(int fd) {
  struct stat st;
  if (!uses_handles_ || fstat(fd, &st) != 0 || st.st_nlink != 0) {
    close(fd);
    return;
  }
  FileHandle handle = HandleOf(fd);
  MutexLock lock(&mu_);
  auto it = inodes_.find(Key{st.st_dev, st.st_ino});
  if (it == inodes_.end() || it->second->pinned_fd >= 0 ||
      !(it->second->handle == handle)) {
    close(fd);  // the kernel does not know it: nothing will ask for it
    return;
  }
  LocalInode& inode = *it->second;
  MutexLock open_lock(&inode.open_mu);
  if (inode.open_fd >= 0) {
    close(fd);
    return;
  }
  inode.open_fd = fd;
}

bool InodeTable::Holds(dev_t dev, ino_t ino) {
  MutexLock lock(&mu_);
  // Nodes leave the map when their count reaches zero (Forget).
  return inodes_.contains(Key{dev, ino});
}

size_t InodeTable::size() {
  MutexLock lock(&mu_);
  return inodes_.size();
}

}  // namespace fgds::backend
