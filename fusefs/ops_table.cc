// The libfuse operation table and connection setup.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fusefs/filesystem.h"

namespace fgds::fusefs {
namespace {

void DoInit(void* userdata, fuse_conn_info* conn) {
  auto* fs = static_cast<Filesystem*>(userdata);
  if (fs->options.writeback_cache &&
      (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  }
  // Locks stay the kernel's local locks: we implement no lock operations,
  // and the kernel must not expect us to.
  conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
  // The backing write runs as root, which keeps set-uid bits a user's write
  // must clear; leave killing privileges to the kernel.
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // Write data arrives in memory, not spliced (see DoWriteBuf).
  conn->want &= ~FUSE_CAP_SPLICE_READ;
  conn->max_write = fs->options.max_io;
  // Must match the max_read mount option given to fuse_session_new.
  conn->max_read = fs->options.max_io;
  // Read-ahead and writeback are "background" requests: allow enough in
  // flight to keep the io_uring rings busy.
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  // The kernel keeps the smaller of this and the read-ahead the daemon set
  // in sysfs before this reply (RaiseReadahead in daemon.cc); libfuse
  // offers the kernel's default (128 KiB), which would undo it.
  if (fs->options.readahead_kb != 0) {
    conn->max_readahead = static_cast<unsigned>(
        std::min<uint64_t>(uint64_t{fs->options.readahead_kb} * 1024,
                           std::numeric_limits<unsigned>::max()));
  }
}

}  // namespace

void AssignOperations(fuse_lowlevel_ops* ops) {
  std::memset(ops, 0, sizeof(*ops));
  ops->init = DoInit;
  AssignEntryOps(ops);
  AssignFileOps(ops);
  AssignDirOps(ops);
  AssignXattrOps(ops);
}

}  // namespace fgds::fusefs
