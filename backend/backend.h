// File: backend/backend.h
//
// Backend: the namespace and file operations the FUSE daemon serves, behind
// one interface, so a second backend (remote storage) is an addition rather
// than a rewrite of fusefs/. A backend names its objects by NodeId, holds a
// lookup count per node the way the kernel's FUSE protocol does, and gives
// out File and Dir handles for open objects.
//
// Results: 0 (or a byte count) on success, -errno on failure. The exact
// errno matters: it is what the application sees (STYLE.md 7).
//
// Thread safety: every method may be called concurrently, for the same node
// too. A handle is released exactly once, after every call using it returned.
#ifndef FGDS_BACKEND_BACKEND_H_
#define FGDS_BACKEND_BACKEND_H_

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/file_io.h"

namespace fgds::backend {

using NodeId = uint64_t;

// The identity of the process a request comes from. Objects a caller creates
// belong to it (uid, gid, and the group rules of the parent directory);
// groups are the caller's supplementary groups.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::vector<gid_t> groups;
  // For calls that create: the caller's umask, which the backend applies
  // unless the parent directory has a default ACL (which replaces it).
  mode_t umask = 0;
};

struct Entry {
  NodeId node = 0;
  struct stat attr = {};
};

// Fields of SetAttr; combined as a bit mask in SetAttrRequest::valid.
enum SetAttrField : unsigned {
  kSetMode = 1 << 0,
  kSetUid = 1 << 1,
  kSetGid = 1 << 2,
  kSetSize = 1 << 3,
  kSetAtime = 1 << 4,
  kSetMtime = 1 << 5,
  kSetAtimeNow = 1 << 6,
  kSetMtimeNow = 1 << 7,
  kSetCtime = 1 << 8,
};

class File;
class Dir;

struct SetAttrRequest {
  unsigned valid = 0;  // SetAttrField bits
  struct stat attr = {};
  File* file = nullptr;  // an open handle of the node, if the caller has one
};

// One directory entry, as ReadDir reports it. `next_offset` resumes after it.
struct DirEntry {
  const char* name;
  ino_t ino;
  unsigned type;  // d_type
  off_t next_offset;
};

// What a backend whose storage other clients change tells the mount, so
// that the kernel drops what it cached (its page cache, attributes and
// names). Calls come on the backend's own threads, never inside a call the
// mount made into the backend.
class CacheEvents {
 public:
  virtual ~CacheEvents() = default;
  // The node's attributes, and its cached data from `offset` on (`len`
  // bytes; 0: to the end; offset < 0: attributes only).
  virtual void InvalidateNode(NodeId node, int64_t offset, int64_t len) = 0;
  // The name `name` in directory `parent` (looked up again at next use).
  virtual void InvalidateEntry(NodeId parent, std::string_view name) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // The root directory's id: always valid, never forgotten.
  virtual NodeId root() const = 0;
  // What moves the data, for `fgds stat` ("io_uring", "inline").
  virtual std::string EngineName() const = 0;
  // True when the backend wants each namespace call's caller
  // (request_caller.h), because its storage checks permissions per call.
  // The local backend does not: the kernel checks (default_permissions)
  // and it works as the daemon, so reading the caller's groups would only
  // cost.
  virtual bool WantsRequestCaller() const { return false; }
  // Whether a request may carry device memory (MemoryRegion::Kind::kDevice)
  // that the backend's storage reaches by DMA. False (a remote backend,
  // whose bytes the CPU copies): the mount offers GPU iovs no direct
  // mapping, so they take the bounce path instead of failing each entry.
  virtual bool ReachesDeviceMemory() const { return true; }
  // Whether the backend can use a GPU iov's dma-buf (MemoryRegion::
  // dmabuf_fd): an RDMA agent registers it with the NIC and moves the bytes
  // in place (backend/remote/rdma_agent_link.h). True: the session keeps
  // each direct GPU iov's dma-buf descriptor for the iov's lifetime (one
  // descriptor each); false: it closes it at registration, as before.
  virtual bool TakesDmabufs() const { return false; }
  // Lines for /.fgds/stats: the backend's own counters, each line ending in
  // a newline (empty: none).
  virtual std::string StatsText() const { return std::string(); }
  // Where to send cache events (null: nowhere). The mount sets it once it
  // exists and clears it before it goes; the call returns only when no
  // event is being delivered to the previous sink.
  virtual void SetCacheEvents(CacheEvents* events) { (void)events; }

  // Namespace. Lookup and every call that returns an Entry add one to the
  // node's lookup count; Forget takes `count` away and drops the node at 0.
  virtual int Lookup(NodeId parent, const char* name, Entry* out) = 0;
  virtual void Forget(NodeId node, uint64_t count) = 0;
  virtual int GetAttr(NodeId node, struct stat* out) = 0;
  virtual int SetAttr(NodeId node, const SetAttrRequest& request,
                      struct stat* out) = 0;
  virtual int ReadLink(NodeId node, std::string* target) = 0;
  virtual int MkNod(const Caller& caller, NodeId parent, const char* name,
                    mode_t mode, dev_t rdev, Entry* out) = 0;
  virtual int MkDir(const Caller& caller, NodeId parent, const char* name,
                    mode_t mode, Entry* out) = 0;
  virtual int SymLink(const Caller& caller, const char* target, NodeId parent,
                      const char* name, Entry* out) = 0;
  virtual int Link(NodeId node, NodeId new_parent, const char* new_name,
                   Entry* out) = 0;
  virtual int Unlink(NodeId parent, const char* name) = 0;
  virtual int RmDir(NodeId parent, const char* name) = 0;
  // flags: renameat2(2)'s RENAME_NOREPLACE, RENAME_EXCHANGE and
  // RENAME_WHITEOUT (overlayfs leaves a whiteout where the name was), as
  // the backing filesystem supports them (-EINVAL where it does not).
  virtual int Rename(NodeId parent, const char* name, NodeId new_parent,
                     const char* new_name, unsigned flags) = 0;
  virtual int StatFs(NodeId node, struct statvfs* out) = 0;

  // Extended attributes. GetXattr and ListXattr return the value's size
  // (size 0 asks for the size only) or -errno (-ERANGE if `size` is short).
  virtual int SetXattr(NodeId node, const char* name, const void* value,
                       size_t size, int flags) = 0;
  virtual int GetXattr(NodeId node, const char* name, void* value,
                       size_t size) = 0;
  virtual int ListXattr(NodeId node, char* list, size_t size) = 0;
  virtual int RemoveXattr(NodeId node, const char* name) = 0;

  // Files. `flags` are open(2) flags. Create makes and opens a regular file.
  virtual int Open(NodeId node, int flags, File** out) = 0;
  virtual int Create(const Caller& caller, NodeId parent, const char* name,
                     mode_t mode, int flags, Entry* entry, File** out) = 0;
  // An unnamed regular file in the directory `parent`, open with `flags`
  // (open(2)'s O_TMPFILE): it has no name until Link gives it one (linkat
  // of the open file), and is gone at its last release otherwise.
  // -EOPNOTSUPP where the backend or the backing filesystem has none.
  virtual int TmpFile(const Caller& caller, NodeId parent, mode_t mode,
                      int flags, Entry* entry, File** out) {
    return -EOPNOTSUPP;
  }
  // Flush runs at every close(2) of a descriptor of the file.
  virtual int Flush(File* file) = 0;
  // Whether Flush does anything for this file; false lets the kernel skip
  // the request at close (FOPEN_NOFLUSH), a round trip per close.
  virtual bool NeedsFlush(File* file) { return true; }
  virtual void Release(File* file) = 0;
  // File data (file_io.h). SubmitIo starts every request of `batch` and
  // never blocks on I/O; each request completes exactly once, on a backend
  // thread or inline (a request the backend refuses completes at once with
  // -errno: -EINVAL for device memory the request cannot reach directly,
  // -EXDEV for device memory routed to another storage device). It may
  // throw (std::bad_alloc) only before it has started any request of the
  // batch: then none of them completes, and the caller still owns them.
  virtual void SubmitIo(std::span<const FileIoRequest> batch) = 0;
  // RunIo moves one request in the calling thread and returns its result
  // (request.completion is not used), with the path taken in *path. For
  // callers that would only wait: a FUSE write's data lives until its
  // reply, and a hop to an engine thread only adds two wakeups.
  virtual int64_t RunIo(const FileIoRequest& request, IoPath* path) = 0;
  // Whether calls the backend gave up on (answered with an error) may still
  // hold threads that entered it, and may never give them back: the ceph
  // gate's, once dead (a read that ran on its FUSE thread stays there).
  // The daemon then does not wait for every thread at its exit.
  virtual bool LeftThreadsBehind() const { return false; }
  // The calls without a data buffer.
  virtual int Fsync(File* file, bool datasync) = 0;
  virtual int Fallocate(File* file, int mode, off_t offset, off_t length) = 0;
  virtual ssize_t CopyFileRange(File* in, off_t in_offset, File* out,
                                off_t out_offset, size_t len,
                                unsigned flags) = 0;
  virtual off_t Lseek(File* file, off_t offset, int whence) = 0;
  // True when the kernel's cached pages of this file are still valid (the
  // file did not change outside the mount since the last open).
  virtual bool KeepCache(File* file) = 0;
  // The node an open file belongs to (whose cached pages the mount drops
  // after a usrbio write).
  virtual NodeId NodeOf(File* file) = 0;
  // A descriptor of the local file that holds `file`'s data, which the
  // kernel may then read and write itself (FUSE passthrough), or -1 where
  // there is none (remote storage). Owned by `file`; valid until Release.
  virtual int PassthroughFd(File* file) { return -1; }
  // usrbio: opens the regular file `node` with open(2) `flags` for a
  // registration; the handle holds a lookup of the node of its own and is
  // released with Release. REQUIRES: the kernel holds `node` (the caller
  // holds a client's descriptor of it, on the mount, with this access mode),
  // so no permission check happens here. -EPERM: a node this backend never
  // gave out (the daemon's control files); -EINVAL: not a regular file.
  virtual int OpenNode(NodeId node, int flags, File** out) {
    return -EOPNOTSUPP;
  }

  // Directories. ReadDir calls `emit` for entries from `offset` on until it
  // returns false (the entry was not taken) or the directory ends.
  virtual int OpenDir(NodeId node, Dir** out) = 0;
  virtual int ReadDir(Dir* dir, off_t offset,
                      const std::function<bool(const DirEntry&)>& emit) = 0;
  virtual void ReleaseDir(Dir* dir) = 0;
  virtual int FsyncDir(Dir* dir, bool datasync) = 0;
  // Whether the node of the entry numbered `ino` (DirEntry::ino) in the
  // directory `dir` is one the kernel holds (a lookup count above zero):
  // a readdirplus then need not look it up again. False when unsure.
  virtual bool HoldsEntry(NodeId dir, ino_t ino) { return false; }
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_BACKEND_H_
