// File: backend/remote/agent/ceph_handle_cache.h
//
// CephHandleCache: the CephFS store's open files, kept between requests. A
// daemon's reads and writes of one file come in streams; an open and a
// close per request cost round trips to the MDS and a capability exchange
// with the daemon's own client each time (docs/agent.md, "Speed"). A
// handle idle for `idle_ms` is closed (by a thread of its own), so the
// agent does not hold capabilities, or an unlinked file's space, for
// long; at most `max_handles` stay open.
//
// Coherence stays Ceph's: a kept handle is an open file of the agent's
// client, whose capabilities the MDS revokes when another client needs
// them, as for any client. Read and write handles are kept apart: a read
// handle wants no write capability, so reads through the agent do not
// stop the daemon's own client from caching the file.
//
// Durability: writes through a handle may sit in the agent's client
// buffers until Sync. A write handle is synced before it is closed (idle,
// or over the bound), and a failure there is kept for the inode's next
// Sync, so that no write-back error goes unreported.
//
// Thread safety: every method may be called concurrently.
#ifndef FGDS_BACKEND_REMOTE_AGENT_CEPH_HANDLE_CACHE_H_
#define FGDS_BACKEND_REMOTE_AGENT_CEPH_HANDLE_CACHE_H_

#include <cstdint>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

struct ceph_mount_info;
struct Inode;
struct Fh;

namespace fgds::remote {

class CephHandleCache {
 public:
  CephHandleCache(ceph_mount_info* cmount, int idle_ms, size_t max_handles);
  // Closes every handle. REQUIRES: none is acquired.
  ~CephHandleCache();
  CephHandleCache(const CephHandleCache&) = delete;
  CephHandleCache& operator=(const CephHandleCache&) = delete;

  // An open handle of the regular file numbered `ino`, for writing or
  // reading: 0 with *fh set, or -errno (-ESTALE: no such inode; -EISDIR,
  // -EINVAL: not a regular file). Each success is paired with Release.
  int Acquire(uint64_t ino, bool write, Fh** fh);
  void Release(uint64_t ino, bool write);
  // Makes every write through a handle of `ino` durable: 0, or -errno (the
  // sync's, or one kept from a handle synced when it was closed).
  int Sync(uint64_t ino);

  // Handles open now (for tests and stats).
  size_t open_handles();

 private:
  using Key = std::pair<uint64_t, bool>;  // inode number, write
  struct Handle {
    Inode* in;
    Fh* fh;
    int users;
    int64_t last_use_ns;
  };
  // Opens `ino` for `write`: 0, or -errno.
  int OpenInode(uint64_t ino, bool write, Inode** in, Fh** fh);
  // Closes a handle taken out of handles_; a write handle is synced first
  // (CloseTaken) or, for one no write went through, not (Close).
  void Close(const Handle& handle);
  void CloseTaken(uint64_t ino, bool write, const Handle& handle);
  // Takes out of handles_ the idle ones (idle longer than idle_ms_, or the
  // least recently used beyond max_handles_), for the caller to CloseTaken;
  // write handles are counted in closing_ until then.
  void TakeIdle(int64_t now_ns, std::vector<std::pair<Key, Handle>>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Sweep();

  ceph_mount_info* const cmount_;
  const int64_t idle_ns_;
  const size_t max_handles_;
  fgds::Mutex mu_;
  fgds::CondVar wake_;
  std::map<Key, Handle> handles_ ABSL_GUARDED_BY(mu_);
  // Write handles taken out and being synced and closed, by inode: Sync
  // waits for them (closed_ is signalled as each finishes).
  std::map<uint64_t, int> closing_ ABSL_GUARDED_BY(mu_);
  fgds::CondVar closed_;
  // Sync failures of closed write handles, for the inode's next Sync.
  std::map<uint64_t, int> sync_errors_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_CEPH_HANDLE_CACHE_H_
