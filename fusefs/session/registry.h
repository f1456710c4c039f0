// File: fusefs/session/registry.h
//
// What one usrbio session registered: iovs (shared memory the daemon maps)
// and files (backend handles opened for the client's fds), by id.
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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "backend/backend.h"
#include "backend/file_io.h"
#include "common/mutex.h"
#include "fusefs/session/user_limits.h"

namespace fgds::session {

// A MAP_SHARED mapping of a client's memfd, unmapped on destruction; or
// (Adopt) GPU memory mapped through the fgds kernel module. Either way a
// backend::MemoryRegion, which is how requests name it to the backend.
class SharedMemory : public backend::MemoryRegion {
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
  // The result is device memory (Kind::kDevice), for files on block device
  // `storage_dev` (the one the module checked the P2P route to; 0: any, in
  // tests).
  static std::shared_ptr<SharedMemory> Adopt(char* base, uint64_t size,
                                             std::shared_ptr<void> keeper,
                                             dev_t storage_dev = 0);
  // NicOnly: device memory (Kind::kDevice) the daemon never maps: a GPU
  // iov of a backend that reaches no device memory, whose only way is a
  // NIC registering its dma-buf (KeepDmabuf; docs/agent.md). base() is
  // `size` bytes of address space reserved PROT_NONE (no pages, nothing of
  // the client's behind them), so that requests can name bytes of it as
  // any region's (base() + offset) while a CPU access, should a bug ever
  // try one past the backends' refusal of kDevice memory, faults instead
  // of reading or writing anything. -ENOMEM when no address space is left.
  static int NicOnly(uint64_t size, std::shared_ptr<SharedMemory>* out);
  ~SharedMemory() override;

  // GPU memory: only O_DIRECT I/O may reach it (backend/local/io_policy.h).
  bool direct_only() const { return kind() == Kind::kDevice; }

  // Keeps `charge` (the owner's limits, user_limits.h) until this mapping
  // is gone: released after the unmap, with the last reference, which may
  // be an I/O completing after the session ended.
  void AttachCharge(Charge charge) { charge_ = std::move(charge); }

  // Device memory: takes over `fd`, the dma-buf the memory was exported
  // as, with `offset` the dma-buf offset of base(), for a backend to
  // register with a NIC (backend::MemoryRegion::dmabuf_fd). Closed when
  // this memory goes (after the backend's registration of it, before the
  // mapping); `charge` (one descriptor, UserLimits' files) is given back
  // then. Call before the memory is shared (AddIov): requests read these
  // without a lock.
  void KeepDmabuf(int fd, uint64_t offset, Charge charge) {
    dmabuf_fd_ = fd;
    dmabuf_offset_ = offset;
    dmabuf_charge_ = std::move(charge);
  }
  int dmabuf_fd() const override { return dmabuf_fd_; }
  uint64_t dmabuf_offset() const override { return dmabuf_offset_; }

  // The GPU (IoStats::GpuSlot) this memory serves: a direct GPU iov's GPU,
  // or the GPU a staging iov stages for (IOV_GPU_STAGING); -1: none. Only
  // for counting per GPU; set by the session thread while ring workers
  // may read it.
  void SetGpuSlot(int slot) {
    gpu_slot_.store(slot, std::memory_order_relaxed);
  }
  int gpu_slot() const { return gpu_slot_.load(std::memory_order_relaxed); }

 private:
  SharedMemory(char* base, uint64_t size, bool owned,
               std::shared_ptr<void> keeper = nullptr, dev_t storage_dev = 0)
      : MemoryRegion(base, size, keeper ? Kind::kDevice : Kind::kHost,
                     storage_dev),
        owned_(owned),
        keeper_(std::move(keeper)) {}
  // Declared before keeper_, so destroyed after it (and after the
  // destructor's munmap): the limits count a mapping until it is gone.
  Charge charge_;
  Charge dmabuf_charge_;
  int dmabuf_fd_ = -1;  // owned; closed by the destructor
  uint64_t dmabuf_offset_ = 0;
  const bool owned_;  // base() is our mmap of a memfd: munmap it
  const std::shared_ptr<void> keeper_;  // owns base() when set
  std::atomic<int> gpu_slot_{-1};
};

// A registered file: a backend handle of the file, released with the last
// reference (the registry's, or an I/O's still in flight).
struct RegisteredFile {
  // `backend` may be null (tests that never do I/O): `file` is then not
  // released.
  RegisteredFile(backend::Backend* backend_in, backend::File* file_in,
                 bool readable_in, bool writable_in, uint64_t node_in = 0,
                 bool unprivileged_writer_in = false)
      : backend(backend_in),
        file(file_in),
        readable(readable_in),
        writable(writable_in),
        node(node_in),
        unprivileged_writer(unprivileged_writer_in) {}
  ~RegisteredFile();
  RegisteredFile(const RegisteredFile&) = delete;
  RegisteredFile& operator=(const RegisteredFile&) = delete;

  backend::Backend* const backend;
  backend::File* const file;
  const bool readable;
  const bool writable;
  // The mount's node id of the file (backend::Backend::NodeOf), whose
  // cached pages usrbio writes invalidate; 0 = unknown.
  const uint64_t node;
  // The registering client is not privileged (its uid, as SO_PEERCRED
  // reports it, is not root): its writes clear set-id bits, as its write(2)
  // would (backend::kIoKillPrivileges).
  const bool unprivileged_writer;
  // The registering user's charge for this file (UserLimits: one file),
  // given back when the object goes: at unregister, or after it when the
  // last I/O holding the file completes, since the descriptors are held
  // until then.
  Charge charge;
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
