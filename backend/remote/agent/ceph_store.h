// File: backend/remote/agent/ceph_store.h
//
// CephStore: an AgentStore over a CephFS file system (or a subtree), through
// libcephfs: what `fgds agent --ceph-conf FILE` serves on a storage host.
// Paths are resolved by libcephfs beneath the mounted subtree (its ".." at
// the root stays at the root, and a symlink's absolute target is taken
// within the mount), after CheckRelativePath refused ".." and absolute
// paths outright. Only regular files are served; nothing is created.
//
// A name "@inode/N" (inode_name.h) is the file with inode number N, as
// daemons send it (`fgds mount --agents`): looked up by number
// (ceph_ll_lookup_inode), so renames do not matter. Served only by an
// agent of the whole file system (--ceph-root /): a subtree's agent could
// not tell whether the inode lies beneath its root, and refuses with
// EPERM (the daemon then serves the request through its own client).
//
// Writes are acknowledged from this client's buffers; Sync writes a
// file's back (ceph_ll_fsync), and the handle cache syncs a write handle
// before closing it, keeping a failure for the next Sync.
//
// The agent acts with the credentials of its cephx client (root by
// default): the daemon checked the user's permission when the file was
// opened through its mount.
//
// Built only where libcephfs is installed (FGDS_HAVE_CEPH).
#ifndef FGDS_BACKEND_REMOTE_AGENT_CEPH_STORE_H_
#define FGDS_BACKEND_REMOTE_AGENT_CEPH_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backend/ceph/ceph_backend.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/ceph_handle_cache.h"

struct ceph_mount_info;

namespace fgds::remote {

class CephStore : public AgentStore {
 public:
  static absl::StatusOr<std::unique_ptr<CephStore>> Open(
      const backend::CephOptions& options);
  ~CephStore() override;

  std::string Describe() const override { return description_; }
  int64_t Read(const std::string& path, uint64_t offset, void* out,
               size_t length) override;
  int64_t Write(const std::string& path, uint64_t offset, const void* data,
                size_t length) override;
  int Sync(const std::string& path) override;

 private:
  CephStore(ceph_mount_info* cmount, std::string description, bool whole_fs)
      : cmount_(cmount),
        description_(std::move(description)),
        whole_fs_(whole_fs),
        handles_(std::make_unique<CephHandleCache>(cmount, kHandleIdleMs,
                                                   kMaxHandles)) {}
  // Open files kept for the daemons' next requests (ceph_handle_cache.h).
  static constexpr int kHandleIdleMs = 1000;
  static constexpr size_t kMaxHandles = 256;
  // A libcephfs descriptor of the regular file `path`, or -errno.
  int OpenFile(const std::string& path, int access);
  // Read or Write of the file numbered `ino` (an "@inode/N" name).
  int64_t MoveByInode(uint64_t ino, bool write, uint64_t offset, char* buf,
                      size_t length);

  ceph_mount_info* const cmount_;
  const std::string description_;
  const bool whole_fs_;  // the root is the file system's: inode names served
  // Inode names' open files; reset before the unmount.
  std::unique_ptr<CephHandleCache> handles_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_CEPH_STORE_H_
