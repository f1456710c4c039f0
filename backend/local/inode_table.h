// File: backend/local/inode_table.h
//
// InodeTable: the local backend's nodes. Each LocalInode pins one backing
// inode with an O_PATH descriptor (so its inode number cannot be reused while
// the kernel knows it) and counts kernel lookups. Two names of one inode
// (hard links) map to one LocalInode, found by (st_dev, st_ino).
//
// NodeId is the LocalInode's address, as in libfuse's passthrough_hp: no map
// lookup on the hot path. The root is NodeId 1 (FUSE_ROOT_ID).
//
// Thread safety: thread-safe. LocalInode's identity fields are immutable; the
// lookup count is guarded by the table's mutex; the cache fields by the
// inode's own mutex. Lock order: table mutex before inode mutex (never the
// reverse).
#ifndef FGDS_BACKEND_LOCAL_INODE_TABLE_H_
#define FGDS_BACKEND_LOCAL_INODE_TABLE_H_

#include <sys/stat.h>

#include <cstdint>
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

struct LocalInode {
  LocalInode(int fd_in, dev_t dev_in, ino_t ino_in, mode_t type_in)
      : fd(fd_in), dev(dev_in), ino(ino_in), type(type_in) {}
  LocalInode(const LocalInode&) = delete;
  LocalInode& operator=(const LocalInode&) = delete;

  const int fd;  // O_PATH | O_NOFOLLOW, owned
  const dev_t dev;
  const ino_t ino;
  const mode_t type;     // S_IFMT bits
  uint64_t nlookup = 0;  // guarded by InodeTable::mu_

  // What the file looked like when a handle was last opened or released, so
  // an open can tell whether the kernel's cached pages are still valid.
  fgds::Mutex cache_mu;
  bool cache_known ABSL_GUARDED_BY(cache_mu) = false;
  struct timespec cache_mtime ABSL_GUARDED_BY(cache_mu) = {};
  off_t cache_size ABSL_GUARDED_BY(cache_mu) = 0;
};

class InodeTable {
 public:
  // Takes ownership of root_fd (an O_PATH descriptor of the backing root).
  InodeTable(int root_fd, const struct stat& root_stat);
  ~InodeTable();
  InodeTable(const InodeTable&) = delete;
  InodeTable& operator=(const InodeTable&) = delete;

  LocalInode& root() { return root_; }

  // The inode of a NodeId the kernel holds. Aborts on an id this table never
  // gave out: that is corrupted state, not a client error.
  LocalInode& Get(NodeId node);

  // Adds one lookup for the inode that `fd` (O_PATH, ownership passed) and
  // `st` describe: an existing LocalInode (fd is then closed) or a new one.
  NodeId Insert(int fd, const struct stat& st);
  // Takes `count` lookups away; deletes the inode at zero.
  void Forget(NodeId node, uint64_t count);

  size_t size();

  // Adds one lookup to `node`, which must be live (the kernel holds it);
  // the caller gives it back with Forget.
  void Acquire(NodeId node);

 private:
  using Key = std::pair<dev_t, ino_t>;
  fgds::Mutex mu_;
  absl::flat_hash_map<Key, LocalInode*> inodes_ ABSL_GUARDED_BY(mu_);
  LocalInode root_;
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
