// File: backend/local/local_backend.h
//
// LocalBackend: a passthrough onto a backing directory. Every node is a
// file handle (InodeTable), opened as an O_PATH descriptor for each
// operation, which is the matching *at() system call on it, so the backing
// filesystem does the real work and gives the real errors. File data goes
// through the IoEngine (io_uring), each request O_DIRECT or through the page
// cache as io_policy.h decides.
//
// The daemon runs as root; calls that create objects take the caller's
// credentials (ScopedCredentials). Permission checks for everything else are
// the kernel's (FUSE default_permissions) before a request reaches us.
//
// Example:
//   auto backend = LocalBackend::Create("/var/lib/fgds/data", {});
//   if (!backend.ok()) return backend.status();
#ifndef FGDS_BACKEND_LOCAL_LOCAL_BACKEND_H_
#define FGDS_BACKEND_LOCAL_LOCAL_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backend/backend.h"
#include "backend/local/inode_table.h"
#include "common/io/io_engine.h"

namespace fgds::backend {

class LocalBackend : public Backend {
 public:
  // Serves `root_dir`, which must be an existing directory. The process
  // umask must be 0 (the kernel already applied the caller's).
  static absl::StatusOr<std::unique_ptr<LocalBackend>> Create(
      const std::string& root_dir, const io::IoEngineOptions& engine_options);
  ~LocalBackend() override;

  NodeId root() const override { return kRootNode; }
  std::string EngineName() const override { return engine_->name(); }
  // Why io_uring is not in use, or empty.
  const std::string& engine_fallback_reason() const { return fallback_; }
  size_t node_count() { return inodes_.size(); }
  // Whether nodes are reached by file handles (false: each pins a
  // descriptor; inode_table.h).
  bool uses_file_handles() const { return inodes_.uses_handles(); }

  int Lookup(NodeId parent, const char* name, Entry* out) override;
  void Forget(NodeId node, uint64_t count) override;
  int GetAttr(NodeId node, struct stat* out) override;
  int SetAttr(NodeId node, const SetAttrRequest& request,
              struct stat* out) override;
  int ReadLink(NodeId node, std::string* target) override;
  int MkNod(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            dev_t rdev, Entry* out) override;
  int MkDir(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            Entry* out) override;
  int SymLink(const Caller& caller, const char* target, NodeId parent,
              const char* name, Entry* out) override;
  int Link(NodeId node, NodeId new_parent, const char* new_name,
           Entry* out) override;
  int Unlink(NodeId parent, const char* name) override;
  int RmDir(NodeId parent, const char* name) override;
  int Rename(NodeId parent, const char* name, NodeId new_parent,
             const char* new_name, unsigned flags) override;
  int StatFs(NodeId node, struct statvfs* out) override;

  int SetXattr(NodeId node, const char* name, const void* value, size_t size,
               int flags) override;
  int GetXattr(NodeId node, const char* name, void* value,
               size_t size) override;
  int ListXattr(NodeId node, char* list, size_t size) override;
  int RemoveXattr(NodeId node, const char* name) override;

  int Open(NodeId node, int flags, File** out) override;
  int Create(const Caller& caller, NodeId parent, const char* name, mode_t mode,
             int flags, Entry* entry, File** out) override;
  int TmpFile(const Caller& caller, NodeId parent, mode_t mode, int flags,
              Entry* entry, File** out) override;
  int Flush(File* file) override;
  bool NeedsFlush(File* file) override;
  void Release(File* file) override;
  int Fsync(File* file, bool datasync) override;
  int Fallocate(File* file, int mode, off_t offset, off_t length) override;
  ssize_t CopyFileRange(File* in, off_t in_offset, File* out, off_t out_offset,
                        size_t len, unsigned flags) override;
  off_t Lseek(File* file, off_t offset, int whence) override;
  bool KeepCache(File* file) override;
  NodeId NodeOf(File* file) override;
  int PassthroughFd(File* file) override;
  int OpenNode(NodeId node, int flags, File** out) override;  // local_reopen.cc

  // local_io.cc
  void SubmitIo(std::span<const FileIoRequest> batch) override;
  int64_t RunIo(const FileIoRequest& request, IoPath* path) override;

  int OpenDir(NodeId node, Dir** out) override;
  int ReadDir(Dir* dir, off_t offset,
              const std::function<bool(const DirEntry&)>& emit) override;
  void ReleaseDir(Dir* dir) override;
  int FsyncDir(Dir* dir, bool datasync) override;
  bool HoldsEntry(NodeId dir, ino_t ino) override;

 private:
  LocalBackend(int root_fd, const struct stat& root_stat,
               std::unique_ptr<io::IoEngine> engine, std::string fallback);

  // Looks `name` up in the directory `dir_fd` and registers the result (one
  // lookup).
  int LookupEntry(int dir_fd, const char* name, Entry* out);
  // LookupEntry for a name this call just created; on failure removes it
  // again (rmdir for `is_dir`), so that a failed create leaves nothing.
  int LookupCreated(int dir_fd, const char* name, bool is_dir, Entry* out);
  // A new descriptor of `inode` with open(2) `flags`, or -errno.
  int ReopenNode(LocalInode& inode, int flags);
  // Remembers the file's current mtime and size; returns whether they equal
  // what was remembered before (the kernel's cached pages are still valid).
  bool RememberCacheState(LocalInode& inode, const struct stat& st);
  // Whether close(2) of `fd` (whose attributes are `st`) does nothing but
  // free it, so that a handle needs no Flush.
  bool CloseIsNoop(int fd, const struct stat& st) const;
  static bool CloseIsNoopOnFs(int fd);

  InodeTable inodes_;
  // The backing root's device, and CloseIsNoop's answer for its
  // filesystem, found once at start.
  const dev_t root_dev_;
  const bool root_close_is_noop_;
  std::unique_ptr<io::IoEngine> engine_;
  std::string fallback_;
};

// "/proc/self/fd/N": how the O_PATH descriptor of a node is reopened or used
// with calls that take no descriptor (chmod, truncate, xattrs).
std::string ProcFdPath(int fd);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_LOCAL_LOCAL_BACKEND_H_
