// File: backend/local/inode_table.h
//
// InodeTable: the local backend's nodes. A LocalInode remembers how to reach
// its backing inode again without holding a descriptor: a file handle
// (name_to_handle_at), which open_by_handle_at turns back into an O_PATH
// descriptor for the length of one operation (PathFd). Only where the
// backing filesystem has no file handles (or the daemon lacks
// CAP_DAC_READ_SEARCH to open them) does a LocalInode pin its inode with an
// O_PATH descriptor for as long as the kernel knows it, as before. So the
// number of nodes the kernel may know is bounded by memory, not by the
// descriptor limit, and a file removed in the backing directory is freed
// (a handle does not keep it) while the kernel still knows its node.
//
// Pinned nodes are bounded (max_pinned, by default half the daemon's
// descriptor limit): past it, a lookup that would pin another descriptor
// is refused with ENFILE, and a warning names the limit, so that the
// descriptors that opens, usrbio and the daemon itself need are never all
// taken by the namespace (before, every later open, and even mkdir, failed
// with EMFILE for every user). Nodes are not dropped and reopened instead
// (an LRU of descriptors): without a handle, the only way back to an inode
// whose descriptor was closed is a path, and a path may name another file
// by then (a rename in the backing directory), which for a daemon serving
// many users would hand one user's node another's file. libfuse's
// passthrough_hp and virtiofsd (--inode-file-handles=never) pin a
// descriptor per node the same way, bounded only by RLIMIT_NOFILE.
//
// A handle carries the inode's generation, so it never reaches a newer file
// that reuses the inode number. Two names of one inode (hard links) map to
// one LocalInode, found by (st_dev, st_ino) and confirmed by the handle;
// when a number was reused, the newer file gets a LocalInode of its own.
//
// While files of an inode are open through the backend (Open, Create,
// OpenNode), the inode holds one O_PATH descriptor of it: an open file that
// was unlinked must stay reachable for fstat, fchown and xattrs, and some
// filesystems (tmpfs) do not open handles of unlinked files. That costs one
// descriptor per open inode, next to the open file's own. If the file has
// no name left at its last close, the descriptor stays until the kernel
// forgets the node (it may still write back times after the close), as an
// unlinked file lives locally until its last reference goes. The same
// holds for a file whose last name the mount removes (KeepUnlinked).
//
// NodeId is the LocalInode's address, as in libfuse's passthrough_hp: no map
// lookup on the hot path. The root is NodeId 1 (FUSE_ROOT_ID); it always
// keeps its descriptor.
//
// Thread safety: thread-safe. LocalInode's identity fields are immutable; the
// lookup count is guarded by the table's mutex; the open pin by the inode's
// open_mu; the cache fields by its cache_mu. Lock order: table mutex before
// an inode's mutexes (never the reverse); open_mu and cache_mu are never
// held together.
#ifndef FGDS_BACKEND_LOCAL_INODE_TABLE_H_
#define FGDS_BACKEND_LOCAL_INODE_TABLE_H_

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "backend/backend.h"
#include "common/mutex.h"

namespace fgds::backend {

// Ids below this are never a LocalInode; the daemon keeps 2..kFirstNodeId-1
// for its own virtual files (fusefs/control_dir.h).
inline constexpr NodeId kRootNode = 1;
inline constexpr NodeId kFirstNodeId = 4096;

// A file handle as name_to_handle_at gives it; empty `bytes`: none.
struct FileHandle {
  int type = 0;
  int mount_id = 0;
  std::string bytes;
  bool operator==(const FileHandle& other) const {
    return type == other.type && mount_id == other.mount_id &&
           bytes == other.bytes;
  }
};

struct LocalInode {
  LocalInode(dev_t dev_in, ino_t ino_in, mode_t type_in, int pinned_fd_in,
             FileHandle handle_in, int mount_fd_in)
      : dev(dev_in),
        ino(ino_in),
        type(type_in),
        pinned_fd(pinned_fd_in),
        handle(std::move(handle_in)),
        mount_fd(mount_fd_in) {}
  LocalInode(const LocalInode&) = delete;
  LocalInode& operator=(const LocalInode&) = delete;

  const dev_t dev;
  const ino_t ino;
  const mode_t type;  // S_IFMT bits
  // O_PATH | O_NOFOLLOW, owned, held for the inode's life; -1 when `handle`
  // reaches the inode.
  const int pinned_fd;
  const FileHandle handle;
  // A descriptor on the handle's mount, for open_by_handle_at; owned by
  // the table, which outlives its inodes. -1 with pinned_fd.
  const int mount_fd;
  uint64_t nlookup = 0;  // guarded by InodeTable::mu_

  // Directories only: an O_PATH descriptor kept from the first Open until
  // the node is forgotten, so that the operations on a directory (each
  // create, rename or unlink in it, and the GETATTR the kernel sends after
  // each change) skip open_by_handle_at and close. -1 when none (not yet
  // opened, or past InodeTable's bound on them). Set once; closed only by
  // Forget, when no operation on the node can be running.
  std::atomic<int> dir_fd{-1};

  // Files open on this inode, and the O_PATH descriptor held meanwhile and,
  // for a file unlinked by its last close, until the node is forgotten (-1
  // if none: the handle then serves alone).
  fgds::Mutex open_mu;
  int open_files ABSL_GUARDED_BY(open_mu) = 0;
  int open_fd ABSL_GUARDED_BY(open_mu) = -1;

  // What the file looked like when a handle was last opened or released, so
  // an open can tell whether the kernel's cached pages are still valid.
  fgds::Mutex cache_mu;
  bool cache_known ABSL_GUARDED_BY(cache_mu) = false;
  struct timespec cache_mtime ABSL_GUARDED_BY(cache_mu) = {};
  off_t cache_size ABSL_GUARDED_BY(cache_mu) = 0;
};

// An O_PATH descriptor of a node for the length of one operation. Closed
// on destruction when it was opened for the operation (never a pinned
// one).
class PathFd {
 public:
  PathFd(int fd, bool owned) : fd_(fd), owned_(owned) {}
  ~PathFd();
  PathFd(PathFd&& other) noexcept : fd_(other.fd_), owned_(other.owned_) {
    other.owned_ = false;
  }
  PathFd(const PathFd&) = delete;
  PathFd& operator=(const PathFd&) = delete;
  PathFd& operator=(PathFd&&) = delete;

  bool ok() const { return fd_ >= 0; }
  // The descriptor; REQUIRES: ok().
  int get() const { return fd_; }
  // When !ok(): the -errno that prevented it (-ENOENT: the backing file is
  // gone).
  int error() const { return fd_; }

 private:
  int fd_;  // or -errno
  bool owned_;
};

class InodeTable {
 public:
  enum class Reach {
    kHandles,  // file handles where the filesystem and privileges allow
    kPinned,   // an O_PATH descriptor per node (tests of the fallback)
  };

  // Takes ownership of root_fd (an O_PATH descriptor of the backing root).
  // With kHandles, probes once whether handles of the root's filesystem
  // can be opened again; if not, every node is pinned.
  // `max_pinned`: the most nodes that may pin a descriptor at once (0:
  // half of RLIMIT_NOFILE's soft limit when the table is made).
  InodeTable(int root_fd, const struct stat& root_stat,
             Reach reach = Reach::kHandles, size_t max_pinned = 0);
  ~InodeTable();
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  LocalInode& root() { return root_; }
  // Whether nodes are reached by file handles (false: every node pins a
  // descriptor).
  bool uses_handles() const { return uses_handles_; }

  // The inode of a NodeId the kernel holds. Aborts on an id this table never
  // gave out: that is corrupted state, not a client error.
  LocalInode& Get(NodeId node);

  // An O_PATH descriptor of `inode` for one operation, or the -errno why
  // there is none (PathFd::error). A directory's first Open keeps its
  // descriptor (LocalInode::dir_fd) while fewer than max_cached_dirs()
  // directories do.
  PathFd Open(LocalInode& inode);

  // Adds one lookup for the inode that `fd` (O_PATH, ownership passed) and
  // `st` describe: an existing LocalInode or a new one. `fd` is closed unless
  // the new node pins it. Returns kNoNode, having closed `fd`, when a new
  // node would pin a descriptor past max_pinned: the caller fails with
  // -ENFILE.
  static constexpr NodeId kNoNode = 0;
  NodeId Insert(int fd, const struct stat& st);
  // Insert and FileOpened in one, for a file just created and opened
  // (Create, TmpFile): `path_fd` (O_PATH, ownership passed) becomes the open
  // pin instead of a second descriptor opened through /proc. Returns kNoNode
  // as Insert does.
  NodeId InsertOpened(int path_fd, const struct stat& st);
  // Takes `count` lookups away; deletes the inode at zero.
  void Forget(NodeId node, uint64_t count);
  // Adds one lookup to `node`, which must be live (the kernel holds it);
  // the caller gives it back with Forget.
  void Acquire(NodeId node);

  // A file of `inode` was opened through `fd` / its last-but-n was
  // released: keeps the inode reachable while it is open (see top).
  void FileOpened(LocalInode& inode, int fd);
  // `nlink`: the file's link count as the caller just read it, or -1
  // (then read here, when it matters).
  void FileClosed(LocalInode& inode, long nlink = -1);
  // `fd` (O_PATH, ownership passed) names a file whose last name was just
  // removed through the mount. If the kernel knows its node, the node keeps
  // `fd` until it is forgotten, as a local unlinked file lives while
  // referenced: with the writeback cache the kernel may still write back
  // its times after the unlink, which must not fail. Otherwise `fd` is
  // closed.
  void KeepUnlinked(int fd);

  // Whether a node for (dev, ino) is in the table, i.e. has lookups.
  bool Holds(dev_t dev, ino_t ino);

  size_t size();
  // Nodes that pin a descriptor now (the root not counted), and the bound.
  size_t pinned();
  size_t max_pinned() const { return max_pinned_; }
  // Directories that keep a descriptor now, and the bound (a quarter of
  // max_pinned: with it, at most 5/8 of the descriptor limit goes to the
  // namespace).
  size_t cached_dirs() const {
    return cached_dirs_.load(std::memory_order_relaxed);
  }
  size_t max_cached_dirs() const { return max_cached_dirs_; }

 private:
  using Key = std::pair<dev_t, ino_t>;
  // Makes `fd` (O_PATH, of the directory `inode`) the one the directory
  // keeps, if the bound allows and none is kept yet; false: the caller
  // still owns it.
  bool KeepDirFd(LocalInode& inode, int fd);
  // Insert's work; `*fd_taken` says whether the node kept `fd` as its pin
  // (else the caller still owns it).
  NodeId Register(int fd, const struct stat& st, bool* fd_taken);
  // The handle of `fd`'s inode, or an empty one where it has none.
  FileHandle HandleOf(int fd);
  // A descriptor on the mount `mount_id` for open_by_handle_at; `fd` (an
  // inode on that mount) is duplicated for it the first time. -1: none.
  int MountFd(int mount_id, int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Logs, at most every 10 s, that max_pinned refused a node.
  void WarnPinnedFull() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  fgds::Mutex mu_;
  absl::flat_hash_map<Key, LocalInode*> inodes_ ABSL_GUARDED_BY(mu_);
  // mount id -> an O_PATH descriptor on that mount (one per mount under the
  // backing root, the root's own included).
  absl::flat_hash_map<int, int> mount_fds_ ABSL_GUARDED_BY(mu_);
  LocalInode root_;
  bool uses_handles_ = false;
  const size_t max_pinned_;
  size_t pinned_ ABSL_GUARDED_BY(mu_) = 0;
  const size_t max_cached_dirs_;
  std::atomic<size_t> cached_dirs_{0};
  uint64_t last_pin_warning_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

// Whether `node` can be a LocalInode's id: the root or an id from
// kFirstNodeId on (below are the daemon's virtual files).
inline bool IsBackendNode(NodeId node) {
  return node == kRootNode || node >= kFirstNodeId;
}

inline NodeId ToNodeId(LocalInode& inode, LocalInode& root) {
  return &inode == &root ? kRootNode : reinterpret_cast<NodeId>(&inode);
}

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_INODE_TABLE_H_
