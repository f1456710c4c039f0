// File: fusefs/passthrough.h
//
// PassthroughFiles: which open files the kernel reads and writes itself,
// straight to the backing file (FUSE passthrough, Linux 6.9+, libfuse
// 3.17+), and which go through the daemon.
//
// The kernel's rules, per FUSE inode (fs/fuse/iomode.c): the files open at
// one time are either all passthrough, all with the same backing file, or
// all served by the daemon; an open that breaks this fails with ETXTBSY
// (or EBUSY). So a node keeps one backing id while any passthrough file of
// it is open, and a new open follows the files already open. Only a node
// with no open file chooses afresh:
// - files with a set-uid or set-gid bit go through the daemon, which
//   clears the bits on a write by an unprivileged caller and keeps them on
//   root's (docs/fgdsd.md, "set-id bits"). In passthrough the kernel writes
//   the backing file with the credentials the backing id was opened with,
//   and root's writes do not clear the bits;
// - everything else is passthrough.
// A file that gains a set-id bit while passthrough files of it are open
// (chmod while open) is still written by the kernel: for that case the
// backing ids are opened without CAP_FSETID, so every passthrough write
// clears the bits as an unprivileged writer's would (root's too, there).
//
// Thread safety: all methods may be called concurrently.
#ifndef FGDS_FUSEFS_PASSTHROUGH_H_
#define FGDS_FUSEFS_PASSTHROUGH_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/mutex.h"

namespace fgds::fusefs {

class PassthroughFiles {
 public:
  // Registers `fd` with the kernel and returns its backing id (> 0), or
  // -errno; unregisters an id. `request` is the fuse_req_t of the open or
  // release at hand (the FUSE connection's ioctls; tests pass their own).
  using OpenBacking = std::function<int(void* request, int fd)>;
  using CloseBacking = std::function<void(void* request, int backing_id)>;

  PassthroughFiles(OpenBacking open_backing, CloseBacking close_backing)
      : open_backing_(std::move(open_backing)),
        close_backing_(std::move(close_backing)) {}

  // How a new open `file` of `node` is served: its backing id (> 0) for
  // passthrough, 0 for the daemon. `fd` is a descriptor of the backing file
  // (registered when the node has no backing id yet); `mode` its st_mode.
  // Every call is paired with one Release of the same `file`.
  int Open(void* request, uint64_t node, const void* file, int fd, mode_t mode);
  void Release(void* request, uint64_t node, const void* file);

  // Whether passthrough files of `node` are open now.
  bool HasPassthroughFiles(uint64_t node) const;

  // Counters for /.fgds/stats.
  uint64_t passthrough_opens() const { return passthrough_opens_.load(); }
  uint64_t daemon_opens() const { return daemon_opens_.load(); }
  // Why the last registration failed ("" if none did).
  std::string last_error() const;

 private:
  struct NodeState {
    int backing_id = 0;  // > 0 while passthrough files are open
    unsigned passthrough_files = 0;
    unsigned daemon_files = 0;
  };

  const OpenBacking open_backing_;
  const CloseBacking close_backing_;
  mutable Mutex mu_;
  std::unordered_map<uint64_t, NodeState> nodes_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<const void*> passthrough_ ABSL_GUARDED_BY(mu_);
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> passthrough_opens_{0};
  std::atomic<uint64_t> daemon_opens_{0};
};

// Opens a backing id for `fd` on the FUSE connection of `req` (a
// fuse_req_t) with CAP_FSETID dropped from the calling thread for the call,
// so that the kernel's passthrough writes clear set-id bits (see above).
// Returns the id (> 0) or -errno.
int OpenBackingWithoutFsetid(void* req, int fd);
// Unregisters a backing id on the FUSE connection of `req`.
void CloseBacking(void* req, int backing_id);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_PASSTHROUGH_H_
