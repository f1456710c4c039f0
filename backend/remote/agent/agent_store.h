// File: backend/remote/agent/agent_store.h
//
// AgentStore: where an agent reads and writes the file extents daemons ask
// for. DirStore serves a local directory (single-host use and tests); the
// CephFS store (libcephfs) is the next one.
//
// Paths are relative to the store's root and checked (CheckRelativePath);
// a store never reaches outside its root, never creates files (the
// namespace is the daemon's: it created the file through its backend),
// and serves regular files only.
//
// Results: bytes moved (a read is short only at end of file), or -errno.
// A write is acknowledged once the store took it (it may sit in a cache:
// the host's page cache, the CephFS client's buffers); Sync makes every
// write acknowledged for the file durable, and reports a failure to write
// back any of them.
// Thread safety: every method may be called concurrently.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AGENT_STORE_H_
#define FGDS_BACKEND_REMOTE_AGENT_AGENT_STORE_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace fgds::remote {

class AgentStore {
 public:
  virtual ~AgentStore() = default;
  // What `fgds agent` prints it serves, e.g. "directory /srv/data".
  virtual std::string Describe() const = 0;
  virtual int64_t Read(const std::string& path, uint64_t offset, void* out,
                       size_t length) = 0;
  virtual int64_t Write(const std::string& path, uint64_t offset,
                        const void* data, size_t length) = 0;
  // The file's data on stable storage: 0, or -errno.
  virtual int Sync(const std::string& path) = 0;
};

// MoveAll: calls `step(done)` (which moves bytes from offset `done` on and
// returns how many, 0 at end of file, or -errno) until `length` bytes
// moved, the file ended, or an error; retries -EINTR. The stores' read and
// write loops.
struct Moved {
  size_t bytes = 0;
  int error = 0;  // the -errno that stopped it; 0 if none
};
template <typename Step>
Moved MoveAll(size_t length, Step step) {
  Moved m;
  while (m.bytes < length) {
    const int64_t n = step(m.bytes);
    if (n == -EINTR) continue;
    if (n < 0) {
      m.error = static_cast<int>(n);
      break;
    }
    if (n == 0) break;
    m.bytes += static_cast<size_t>(n);
  }
  return m;
}

class DirStore : public AgentStore {
 public:
  // Fails if `root` is not a directory the agent can open.
  static absl::StatusOr<std::unique_ptr<DirStore>> Open(
      const std::string& root);
  ~DirStore() override;

  std::string Describe() const override;
  int64_t Read(const std::string& path, uint64_t offset, void* out,
               size_t length) override;
  int64_t Write(const std::string& path, uint64_t offset, const void* data,
                size_t length) override;
  int Sync(const std::string& path) override;

 private:
  DirStore(std::string root, int root_fd)
      : root_(std::move(root)), root_fd_(root_fd) {}
  // Opens `name` beneath the root for `access` (O_RDONLY or O_WRONLY):
  // a descriptor, or -errno (-EXDEV for a path that leaves the root,
  // -EINVAL for anything but a regular file, -ESTALE for a checked path
  // (inode_name.h) whose file is no longer the one named).
  int OpenFile(const std::string& name, int access);

  const std::string root_;
  const int root_fd_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_STORE_H_
