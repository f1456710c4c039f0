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
// Thread safety: handlers run on many libfuse threads and on io_uring
// completion threads at once; Filesystem's members are themselves
// thread-safe or immutable after start.
#ifndef FGDS_FUSEFS_FILESYSTEM_H_
#define FGDS_FUSEFS_FILESYSTEM_H_

#include <fuse_lowlevel.h>

#include <memory>
#include <new>
#include <string>

#include "backend/backend.h"
#include "fusefs/buffer_pool.h"
#include "fusefs/control_dir.h"
#include "fusefs/op_stats.h"
#include "fusefs/options.h"

namespace fgds::fusefs {

struct Filesystem {
  Filesystem(const DaemonOptions& options_in,
             std::unique_ptr<backend::Backend> backend_in)
      : options(options_in),
        backend(std::move(backend_in)),
        read_buffers(options_in.max_io, 64) {}

  const DaemonOptions options;
  const std::unique_ptr<backend::Backend> backend;
  OpStats stats;
  // Buffers for read replies, max_io bytes each.
  BufferPool read_buffers;
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

// Fills `e` for a reply from a backend entry, with the configured timeouts.
void FillEntry(const Filesystem& fs, const backend::Entry& entry,
               fuse_entry_param* e);

// Runs a handler body; a failed allocation becomes ENOMEM for the caller
// instead of an exception escaping into libfuse (STYLE.md 8).
template <typename Body>
void Guarded(fuse_req_t req, Body&& body) {
  try {
    body();
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  }
}

void AssignOperations(fuse_lowlevel_ops* ops);

// Groups of handlers, each in its own file.
void AssignEntryOps(fuse_lowlevel_ops* ops);  // ops_entry.cc
void AssignFileOps(fuse_lowlevel_ops* ops);   // ops_file.cc
void AssignDirOps(fuse_lowlevel_ops* ops);    // ops_dir.cc
void AssignXattrOps(fuse_lowlevel_ops* ops);  // ops_xattr.cc

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_FILESYSTEM_H_
