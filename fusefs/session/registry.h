// File: fusefs/session/registry.h
//
// What one usrbio session registered: iovs (shared memory the daemon maps)
// and files (backing descriptors reopened from the client's fds), by id.
//
// Ids are per session and never reused within it, so an entry cannot reach
// another session's objects, nor a later object that took a freed id. An
// in-flight I/O holds shared_ptrs to its iov and file: unregistering, or the
// session ending, drops the table's reference, and the mapping or the
// descriptors go away when the last I/O using them completes.
//
// Thread safety: thread-safe. The session thread adds and removes; ring
// workers look up (under a reader lock, once per batch).
#ifndef FGDS_FUSEFS_SESSION_REGISTRY_H_
#define FGDS_FUSEFS_SESSION_REGISTRY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/mutex.h"

namespace fgds::session {

// A MAP_SHARED mapping of a client's memfd, unmapped on destruction; or
// (Adopt) GPU memory mapped through the fgds kernel module.
class SharedMemory {
 public:
  // Maps `size` bytes of `fd` (not taken over) read-write. The fd must be a
  // memfd sealed against shrinking (F_SEAL_SHRINK) of at least `size`
  // bytes: otherwise the client could truncate it under us and turn our
  // accesses into SIGBUS. Returns -EINVAL (not a sealed memfd, too small)
  // or the mmap errno.
  static int Map(int fd, uint64_t size, std::shared_ptr<SharedMemory>* out);
  // Wraps memory the caller owns (tests and fuzzers); not unmapped.
  static std::shared_ptr<SharedMemory> Borrow(void* base, uint64_t size);
  // Adopt wraps `size` bytes at `base` that `keeper` keeps mapped (a GPU
  // iov's module mapping, gpu_iov.h), released with the last reference.
  // The result is direct_only, for files on block device `storage_dev`
  // (the one the module checked the P2P route to; 0: any, in tests).
  static std::shared_ptr<SharedMemory> Adopt(char* base, uint64_t size,
                                             std::shared_ptr<void> keeper,
                                             dev_t storage_dev = 0);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  // GPU memory: only O_DIRECT I/O may reach it (sqe_check.h). The CPU
  // copying through the page cache would read or write the GPU's BAR one
  // PCIe transaction at a time, if the platform allows it at all.
  bool direct_only() const { return keeper_ != nullptr; }
  // direct_only: the device whose route to the GPU was checked; I/O with
  // files elsewhere must not target this memory. 0: not checked.
  dev_t storage_dev() const { return storage_dev_; }

 private:
  SharedMemory(char* base, uint64_t size, bool owned,
               std::shared_ptr<void> keeper = nullptr, dev_t storage_dev = 0)
      : base_(base),
        size_(size),
        owned_(owned),
        keeper_(std::move(keeper)),
        storage_dev_(storage_dev) {}
  char* const base_;
  const uint64_t size_;
  const bool owned_;  // base_ is our mmap of a memfd: munmap it
  const std::shared_ptr<void> keeper_;  // owns base_ when set
  const dev_t storage_dev_;
};

// A registered file: descriptors of the backing file, owned.
struct RegisteredFile {
  RegisteredFile(int fd_in, int direct_fd_in, bool readable_in,
                 bool writable_in, uint64_t node_in = 0,
                 dev_t storage_dev_in = 0)
      : fd(fd_in),
        direct_fd(direct_fd_in),
        readable(readable_in),
        writable(writable_in),
        node(node_in),
        storage_dev(storage_dev_in) {}
  ~RegisteredFile();
  RegisteredFile(const RegisteredFile&) = delete;
  RegisteredFile& operator=(const RegisteredFile&) = delete;

  const int fd;         // buffered
  const int direct_fd;  // O_DIRECT, or -1 where the backing fs refuses it
  const bool readable;
  const bool writable;
  // The mount's node id of the file (backend::Backend::NodeByIno), whose
  // cached pages usrbio writes invalidate; 0 = unknown.
  const uint64_t node;
  // The block device its data lives on (kmod::StorageDevice), learnt at
  // registration for the direct_only iovs' route check; 0 = unknown.
  const dev_t storage_dev;
};

struct RegistryLimits {
  size_t max_iovs = 1024;
  size_t max_files = 65536;
  uint64_t max_iov_bytes = uint64_t{1} << 40;  // per iov
};

class Registry {
 public:
  explicit Registry(const RegistryLimits& limits = {}) : limits_(limits) {}

  const RegistryLimits& limits() const { return limits_; }

  // Add* return the new id, or -ENOSPC past the limits.
  int64_t AddIov(std::shared_ptr<SharedMemory> iov);
  int64_t AddFile(std::shared_ptr<RegisteredFile> file);
  // 0, or -ENOENT for an id this session does not have.
  int RemoveIov(uint32_t id);
  int RemoveFile(uint32_t id);
  void Clear();

  // Lookups for ring workers; REQUIRES: a ReaderLock on mu() held.
  const std::shared_ptr<SharedMemory>* FindIov(uint32_t id) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  const std::shared_ptr<RegisteredFile>* FindFile(uint32_t id) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  fgds::Mutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }

 private:
  const RegistryLimits limits_;
  mutable fgds::Mutex mu_;
  uint32_t next_iov_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t next_file_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint32_t, std::shared_ptr<SharedMemory>> iovs_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, std::shared_ptr<RegisteredFile>> files_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_REGISTRY_H_
