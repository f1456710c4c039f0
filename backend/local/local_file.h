// File: backend/local/local_file.h
//
// File: the local backend's open file. Its main descriptor is never
// O_DIRECT, whatever the opener asked: the kernel writes a FUSE file's
// dirty pages back through any writable handle of the inode, partial last
// pages included, and an O_DIRECT descriptor would refuse those with
// EINVAL (data the kernel accepted would be lost). O_DIRECT goes through a
// second descriptor of the same file, the "twin", used only for requests
// that meet its alignment (io_policy.h).
#ifndef FGDS_BACKEND_LOCAL_LOCAL_FILE_H_
#define FGDS_BACKEND_LOCAL_LOCAL_FILE_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>

#include "backend/backend.h"
#include "backend/local/inode_table.h"
#include "backend/registration_key.h"

namespace fgds::backend {

class File {
 public:
  // Takes ownership of `fd`. Has a twin when `want_twin` and the
  // descriptor allows it (not O_APPEND, a filesystem with O_DIRECT).
  // `holds_lookup`: the handle holds one lookup of `inode` (OpenNode),
  // which Release gives back. `st`: fd's attributes, as the caller just
  // read them; `close_is_noop`: LocalBackend::CloseIsNoop of fd (both
  // passed in so that a create or open stats its file once).
  File(int fd, const struct stat& st, bool close_is_noop, LocalInode& inode,
       NodeId node, bool keep_cache, bool want_twin, bool holds_lookup);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const int fd;  // buffered (the opener's flags less O_DIRECT)
  // O_DIRECT, same access mode as fd; -1 where there is none. Opened at
  // the first call, not with the handle: most handles never do I/O through
  // the daemon (passthrough, or a create that is closed at once), and the
  // twin costs three syscalls (fcntl, open, close).
  int direct_fd() const;
  LocalInode& inode;
  const NodeId node;
  const bool keep_cache;
  const bool holds_lookup;
  // Whether close(2) of a descriptor of the backing file has no effect
  // beyond freeing it (LocalBackend::CloseIsNoop), so Flush need not run.
  const bool close_is_noop;
  // The block device the data lives on (for device memory's route check);
  // 0 when unknown.
  const dev_t storage_device;
  // The file system refused a read with RWF_NOWAIT (EOPNOTSUPP): cached
  // reads go to the engine without asking again (local_io.cc).
  std::atomic<bool> nowait_refused{false};
  // Names this open file in the ring workers' io_uring file tables
  // (nowait_reader.h). ~File hands fd to it (CloseWhenUnregistered): fd
  // stays open while a table holds the file and is closed off the ring
  // workers once none does. Destroyed, and its retirement logged, after
  // ~File's body: each table then drops the file at its next batch.
  const RegistrationKey registration_key;

 private:
  static constexpr int kTwinNotOpened = -2;
  const bool want_twin_;
  mutable std::atomic<int> direct_fd_{kTwinNotOpened};
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_LOCAL_FILE_H_
