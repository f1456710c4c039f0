// File: fusefs/filesystem.h
//
// Filesystem: the state every FUSE handler shares (the libfuse session's
// userdata). Handlers are in ops_*.cc, grouped by kind; AssignOperations
// fills the libfuse table with them.
//
// FUSE node ids are backend NodeIds (the root is FUSE_ROOT_ID in both), plus
// the control directory's ids (control_dir.h). File handles (fi->fh) are
// backend File pointers, or ControlFile pointers for control nodes.
//
// Handlers may throw: AssignOperations wraps each in a guard that turns an
// exception into an errno reply (ops_table.cc), so a handler only has to
// free what it holds (RAII) and must reply last.
//
// Thread safety: handlers run on many libfuse threads and on io_uring
// completion threads at once; Filesystem's members are themselves
// thread-safe or immutable after start.
#ifndef FGDS_FUSEFS_FILESYSTEM_H_
#define FGDS_FUSEFS_FILESYSTEM_H_

#include <fuse_lowlevel.h>

#include <atomic>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/mutex.h"
#include "fusefs/buffer_pool.h"
#include "fusefs/control_dir.h"
#include "fusefs/fuse_features.h"
#include "fusefs/op_stats.h"
#include "fusefs/options.h"
#include "fusefs/passthrough.h"

namespace fgds::fusefs {

struct Filesystem {
  // `allocate_buffer` makes the read and write buffers (tests inject
  // failures through it).
  Filesystem(const DaemonOptions& options_in,
             std::unique_ptr<backend::Backend> backend_in,
             BufferPool::Allocator allocate_buffer = BufferPool::kAlignedAlloc)
      : options(options_in),
        backend(std::move(backend_in)),
        read_buffers(options_in.max_io, 64, allocate_buffer) {}

  const DaemonOptions options;
  const std::unique_ptr<backend::Backend> backend;
  OpStats stats;
  // Buffers for read replies, max_io bytes each.
  BufferPool read_buffers;
  // The kernel enforces POSIX ACLs (FUSE_CAP_POSIX_ACL, granted in init);
  // without it, ACLs would be stored but not honoured, so setting one is
  // refused. Set once in init, before any other request.
  std::atomic<bool> posix_acl{false};
  // FUSE passthrough and FUSE over io_uring (fuse_features.h). The
  // blockers are found before mounting; the states are decided in init.
  std::string passthrough_blocker;
  std::string fuse_uring_blocker;
  // Ask for FUSE_HANDLE_KILLPRIV_V2 (killpriv_v2 below) even without
  // passthrough: the ceph backend's (fuse_features.cc). Set before init.
  bool killpriv_v2_without_passthrough = false;
  // The backing directory is on a stacked filesystem (overlayfs, FUSE):
  // passthrough then tells the kernel its files are stacked.
  bool backing_stacked = false;
  // Open files use passthrough (read without the lock on every open).
  std::atomic<bool> passthrough{false};
  PassthroughFiles passthrough_files{
      OpenBackingWithoutFsetid,
      [](void* req, int backing_id) { CloseBacking(req, backing_id); }};
  // The kernel leaves killing set-id bits on write, truncate and open with
  // O_TRUNC to us (FUSE_HANDLE_KILLPRIV_V2, asked for with passthrough, or
  // with killpriv_v2_without_passthrough): it
  // then stops asking for security.capability before every write. Set in
  // init.
  std::atomic<bool> killpriv_v2{false};
  // Requests that came through io_uring and through /dev/fuse reads.
  std::atomic<uint64_t> uring_requests{0};
  std::atomic<uint64_t> dev_requests{0};
  // Replies to io_uring requests sent from another thread than the ring
  // thread that received the request. libfuse 3.18's rings are not safe
  // for those (ops_file.cc, DoRead): it must stay 0.
  std::atomic<uint64_t> uring_replies_off_thread{0};
  // One line for `fgds mount`'s log and /.fgds/stats (DescribeFeatures).
  std::string Features() const {
    MutexLock lock(&features_mu);
    return DescribeFeatures(passthrough_state, fuse_uring_state);
  }
  mutable Mutex features_mu;
  FeatureState passthrough_state ABSL_GUARDED_BY(features_mu);
  FeatureState fuse_uring_state ABSL_GUARDED_BY(features_mu);
  // One line on top of /.fgds/stats (engine, mount); set before serving.
  std::string stats_header;
  // /.fgds; files are added before serving.
  ControlDir control;
};

inline Filesystem& Fs(fuse_req_t req) {
  return *static_cast<Filesystem*>(fuse_req_userdata(req));
}

// The caller of `req` as the backend wants it; `with_groups` also reads its
// supplementary groups (costly: only for calls that create objects).
backend::Caller CallerOf(fuse_req_t req, bool with_groups);

// Clears `node`'s S_ISUID, and S_ISGID where the group may execute, as a
// write by an unprivileged writer does. 0 or -errno.
int KillSetIdBits(Filesystem& fs, backend::NodeId node);

// Whether the kernel asks `fi`'s request (write, open, create) to kill
// set-id bits (FUSE_HANDLE_KILLPRIV_V2).
bool KillSuidgidAsked(const Filesystem& fs, const fuse_file_info* fi);

// Fills `e` for a reply from a backend entry, with the configured timeouts.
void FillEntry(const Filesystem& fs, const backend::Entry& entry,
               fuse_entry_param* e);

void AssignOperations(fuse_lowlevel_ops* ops);

// Groups of handlers, each in its own file.
void AssignEntryOps(fuse_lowlevel_ops* ops);  // ops_entry.cc
void AssignFileOps(fuse_lowlevel_ops* ops);   // ops_file.cc
void AssignDirOps(fuse_lowlevel_ops* ops);    // ops_dir.cc
void AssignXattrOps(fuse_lowlevel_ops* ops);  // ops_xattr.cc

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_FILESYSTEM_H_
