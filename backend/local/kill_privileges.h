// File: backend/local/kill_privileges.h
//
// What a write by an unprivileged writer does to the file's set-id bits
// (write(2)'s file_remove_privs): S_ISUID goes, and S_ISGID where the group
// may execute (without group-execute, S_ISGID marks mandatory locking, which
// a write keeps). The local backend writes with the daemon's privilege,
// which the kernel lets keep the bits, so requests that carry
// kIoKillPrivileges (file_io.h) clear them here, before the data lands.
//
// Cost: one fstat per file and batch (plus an fchmod when a bit is set),
// not one per request: a ring batch of 4 KiB writes to one file pays once.
//
// Thread safety: PrivilegeKiller is used by one thread for one batch.
#ifndef FGDS_BACKEND_LOCAL_KILL_PRIVILEGES_H_
#define FGDS_BACKEND_LOCAL_KILL_PRIVILEGES_H_

#include <utility>

#include "absl/container/inlined_vector.h"
#include "backend/file_io.h"

namespace fgds::backend {

// Clears the set-id bits a write by an unprivileged writer clears, of the
// file `fd` is open on. 0 or -errno.
int KillPrivileges(int fd);

// Applies KillPrivileges for the requests of one batch that ask for it,
// once per file.
class PrivilegeKiller {
 public:
  // 0 when `request` may go ahead: it asks for nothing, or its file's bits
  // are cleared (now or earlier in this batch); else the -errno to fail it
  // with, as write(2) fails when it cannot clear them.
  int Before(const FileIoRequest& request);

 private:
  // Files of this batch already handled, with the result. Batches touch few
  // files, so a linear search beats hashing.
  absl::InlinedVector<std::pair<const File*, int>, 4> done_;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_KILL_PRIVILEGES_H_
