// File: backend/file_io.h
//
// The data path of every backend: reads, writes and syncs of a backend's own
// File handles into memory references, asynchronous and in batches. FUSE
// reads and writes, usrbio ring entries and GPU iovs all arrive here; no
// file descriptor crosses this interface, so a backend without local
// descriptors (remote storage) serves the same requests.
//
// A request names:
//   - a File the backend gave out (Backend::Open, Create or OpenNode);
//   - a memory reference: the CPU address of the first byte and, when the
//     memory is registered, its MemoryRegion (a usrbio host iov, a GPU iov's
//     host staging, a GPU iov's device mapping; later an RDMA region);
//   - a length and file offset, and hints (IoFlags).
// How the bytes move (O_DIRECT or the page cache, alignment, which device a
// GPU mapping may reach) is the backend's decision; it reports the one it
// took with each completion (IoPath), which users read in `fgds stat`.
#ifndef FGDS_BACKEND_FILE_IO_H_
#define FGDS_BACKEND_FILE_IO_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "backend/registration_key.h"
#include "common/io/io_engine.h"
#include "common/mutex.h"

namespace fgds::backend {

class File;

// Memory a client registered with the daemon. The backend reads only these
// properties; who maps and unmaps the memory is the owner's business (it
// outlives every request that references it).
class MemoryRegion {
 public:
  enum class Kind : uint8_t {
    kHost,  // ordinary pages the CPU may copy to and from
    // GPU memory: DMA only. Mapped through the fgds module, or (a backend
    // that reaches no device memory) not mapped at all: base() is then an
    // inaccessible reservation (session/registry.h, SharedMemory::NicOnly)
    // and only a NIC registering dmabuf_fd() moves its bytes.
    kDevice,
  };
  MemoryRegion(char* base, uint64_t size, Kind kind, dev_t route_device)
      : base_(base), size_(size), kind_(kind), route_device_(route_device) {}
  virtual ~MemoryRegion() = default;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  Kind kind() const { return kind_; }
  // kDevice: the block device whose peer-to-peer route to the GPU was
  // checked when the region was mapped; I/O with files elsewhere must not
  // target it. 0: not checked (tests).
  dev_t route_device() const { return route_device_; }
  // Names this region in kernel tables that pin its pages (the ring
  // workers' io_uring buffers, local/nowait_reader.h): never reused, so a
  // new region at the same address is never taken for this one.
  const RegistrationKey& registration_key() const { return key_; }
  // kDevice: the dma-buf the memory was exported as, for a NIC to register
  // (ibv_reg_dmabuf_mr, backend/remote/rdma_agent_link.h): a descriptor
  // the owner keeps open as long as the region, and the offset of base()'s
  // byte in it. -1: none kept (host memory; a GPU iov of a mount whose
  // backend takes no dma-bufs, Backend::TakesDmabufs).
  virtual int dmabuf_fd() const { return -1; }
  virtual uint64_t dmabuf_offset() const { return 0; }

  // What a backend keeps per region: its registration of the memory with
  // a NIC (an RDMA memory region, backend/remote/agent_pool.h). Made at
  // the first request that needs it and destroyed with the region, which
  // its owner keeps until every request naming it completed: so it never
  // goes while I/O uses it.
  class Attachment {
   public:
    virtual ~Attachment() = default;
  };
  // The region's attachment: made by `make` at the first call, the same
  // one after (one per region: a mount has one backend). Thread-safe.
  Attachment* Attach(
      absl::FunctionRef<std::unique_ptr<Attachment>()> make) const {
    fgds::MutexLock lock(&attachment_mu_);
    if (attachment_ == nullptr) attachment_ = make();
    return attachment_.get();
  }
  // The attachment if one was made, else null (makes none).
  Attachment* attachment() const {
    fgds::MutexLock lock(&attachment_mu_);
    return attachment_.get();
  }

 protected:
  // Destroys the attachment now: owners whose destructor unmaps the
  // memory call it first, so a registration never outlives the mapping.
  void DropAttachment() {
    std::unique_ptr<Attachment> gone;
    fgds::MutexLock lock(&attachment_mu_);
    gone.swap(attachment_);
  }

 private:
  const RegistrationKey key_;
  mutable fgds::Mutex attachment_mu_;
  mutable std::unique_ptr<Attachment> attachment_
      ABSL_GUARDED_BY(attachment_mu_);
  char* const base_;
  const uint64_t size_;
  const Kind kind_;
  const dev_t route_device_;
};

// FileOp::kFsync and kFdatasync ignore the memory, length and offset.
enum class FileOp : uint8_t { kRead, kWrite, kFsync, kFdatasync };

// Which way a request's bytes went.
enum class IoPath : uint8_t {
  kNone,       // no data moved (syncs, failures before any I/O)
  kDirect,     // O_DIRECT: storage DMA straight to or from the memory
  kPageCache,  // copied through the backing file's page cache
  // Moved by a storage-side agent (backend/remote/, `fgds mount --agents`):
  // over its TCP connection, or by RDMA into the memory.
  kAgentTcp,
  kAgentRdma,
  // Device memory no agent moved, of a backend that cannot reach it
  // itself (Backend::ReachesDeviceMemory false: a GPU iov kept only for
  // the NIC): the result is -EREMOTEIO, no byte of a read is to be used,
  // and the client moves the entry through its own bounce staging
  // (FGDS_PATH_BOUNCE_ENTRY). kBounceAlways: and the region will never
  // move by an agent (its NIC registration failed, checked payloads).
  kBounceEntry,
  kBounceAlways,
};

// Whether `path` is a "bounce this entry" answer (either kind).
inline bool IsBounce(IoPath path) {
  return path == IoPath::kBounceEntry || path == IoPath::kBounceAlways;
}

// Hints from the caller, combined in FileIoRequest::flags.
//
// kIoPreferDirect: move the bytes past the page cache (O_DIRECT) where the
// request allows it; without it the backend uses the page cache. Memory of
// Kind::kDevice always needs the direct path.
inline constexpr uint32_t kIoPreferDirect = 1u << 0;
// kIoKillPrivileges: the writer is not privileged (no CAP_FSETID), so a
// write clears the file's set-user-ID bit, and its set-group-ID bit where
// the group may execute, before the data lands: what write(2) does
// (file_remove_privs). The backend writes with its own privilege, which
// the kernel would let keep them. Ignored for reads and syncs.
inline constexpr uint32_t kIoKillPrivileges = 1u << 1;
// kIoInlineIfCached: the caller's thread may move a read's bytes itself,
// inside SubmitIo, when they are in the page cache already (the local
// backend: preadv2 with RWF_NOWAIT, which never waits for the disk; the
// rest goes to the engine as before). Such a completion runs before
// SubmitIo returns, on the caller's thread. For callers whose thread
// nothing the kernel waits on depends on, and who would otherwise wake an
// engine thread per batch: a usrbio ring worker (fusefs/session/ring.h),
// where a hand-off and its wakeups cost more than a 4 KiB copy.
// Ignored for writes, syncs, device memory, O_DIRECT and large reads (the
// local backend: over 64 KiB, which its engine copies on several threads).
inline constexpr uint32_t kIoInlineIfCached = 1u << 2;

// Receives a request's result: bytes moved (fewer than asked only at end of
// file for reads) or -errno. The backend sets path() before the request
// can complete, so Complete may read it. Must stay alive until Complete,
// which may delete it.
class FileIoCompletion : public io::IoCompletion {
 public:
  IoPath path() const { return path_; }
  void set_path(IoPath path) { path_ = path; }

 private:
  IoPath path_ = IoPath::kNone;
};

struct FileIoRequest {
  FileOp op = FileOp::kRead;
  File* file = nullptr;
  const MemoryRegion* region = nullptr;  // null: `buf` is plain host memory
  char* buf = nullptr;                   // inside `region` when it is set
  uint64_t len = 0;
  uint64_t offset = 0;
  uint32_t flags = 0;                      // kIo* hints
  FileIoCompletion* completion = nullptr;  // not owned
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_FILE_IO_H_
