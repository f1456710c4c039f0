// File: usrbio/gpu/stager.h
//
// Stager: the bounce pipeline of one ior (fgds_ior.gpu). It takes the ior's
// entries on GPU iovs, cuts each into chunks (common/io/chunking.h), runs every
// chunk through a staging slot of its iov, and gives one completion per entry:
//
//   read   SQE (tag kStagerTag) into the slot -> CQE -> H2D copy on the
//          iov's stream + event -> event done -> slot free
//   write  D2H copy + event -> event done -> SQE from the slot -> CQE ->
//          slot free
//
// An entry the daemon can take on a NIC-only DIRECT iov's own id
// (DirectEntry) goes there whole, still through the stager: if the daemon
// answers "bounce this entry" (FGDS_PATH_BOUNCE_ENTRY, _ALWAYS: a remote
// backend's NIC could not move it), the stager runs it through the staging
// as above, and the caller still sees one completion (path
// FGDS_PATH_BOUNCE). A mapped DIRECT iov's such entries never come here
// (MappedEntry: they cannot bounce, fgds_prep_io puts them on the ring).
//
// No thread of its own: fgds_ior_submit, fgds_ior_peek and fgds_ior_wait
// drive it. Chunks without a free slot wait in their request (staging never
// grows); SQEs wait while the ring has no room.
//
// Thread safety: one submitting and one reaping thread at a time, as every
// ior. Both touch the stager, so each call takes mu_; once an ior has a
// stager, its host entries go through it too (the SQ then has two producers:
// prep/submit and the chunks the reaper issues). Ior-wide counters the host
// path also updates (in_flight) are atomic.
#ifndef FGDS_USRBIO_GPU_STAGER_H_
#define FGDS_USRBIO_GPU_STAGER_H_

#include <cstdint>
#include <mutex>

#include "fgds/usrbio.h"
#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/gpu/request_result.h"

namespace fgds::usrbio::gpu {

// fgds_sqe.tag of the stager's chunk entries; fgds_prep_io's are 0.
inline constexpr uint32_t kStagerTag = FGDS_SQE_TAG_GPU_STAGING;
// fgds_sqe.tag of a direct entry (one whole request on the iov's
// direct_id, userdata the Request).
inline constexpr uint32_t kDirectTag = FGDS_SQE_TAG_GPU_DIRECT;

// An intrusive FIFO (no allocation on the I/O path: T has a `next`).
template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == nullptr; }
  T* front() const { return head_; }
  void push(T* item) {
    item->next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = item;
    } else {
      head_ = item;
    }
    tail_ = item;
  }
  T* pop() {
    T* item = head_;
    head_ = item->next;
    if (head_ == nullptr) tail_ = nullptr;
    item->next = nullptr;
    return item;
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
};

// One entry on a GPU iov.
struct Request {
  explicit Request(uint64_t length) : len(length), result(length) {}
  enum class Stage { kPrepared, kActive, kDraining, kFinished };
  GpuIov* iov = nullptr;
  uint8_t opcode = 0;
  uint8_t sqe_flags = 0;
  uint32_t fd_id = 0;
  uint64_t dev = 0;  // device address of the entry's first byte
  uint64_t file_offset = 0;
  uint64_t len;
  uint64_t userdata = 0;
  // Goes to the daemon whole on iov->direct_id (DirectEntry) rather than
  // through the staging, until the daemon answers "bounce this entry":
  // then cleared and the request starts over on the staging.
  bool direct = false;
  uint32_t path = FGDS_PATH_BOUNCE;  // of its completion
  uint64_t next_byte = 0;            // bytes already given to chunks
  uint32_t chunks = 0;               // chunks started, not finished
  Stage stage = Stage::kPrepared;
  RequestResult result;
  Request* next = nullptr;  // in the Fifo of its stage
};

class Stager {
 public:
  explicit Stager(fgds_ior* ior) : ior_(ior) {}
  ~Stager();  // frees requests never submitted
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // The fgds_prep_io / submit / peek / wait of an ior that has a stager.
  int PrepHost(const fgds_sqe& sqe);
  // `direct`: the entry goes on the iov's direct id first (DirectEntry of
  // a NIC-only iov). -EBUSY while another ior has entries on the iov (its
  // staging serves one ior at a time).
  int PrepGpu(const fgds_iov* iov, uint32_t opcode, uint32_t sqe_flags,
              uint64_t dev, int fd_id, uint64_t file_offset, uint64_t len,
              uint64_t userdata, bool direct = false);
  // Entries the daemon answered "bounce this entry" and that were
  // re-issued through the staging (tests and stats).
  uint64_t bounce_retries() {
    std::lock_guard<std::mutex> lock(mu_);
    return bounce_retries_;
  }
  int Submit();
  int Peek(fgds_cqe* cqes, unsigned max);
  int Wait(fgds_cqe* cqes, unsigned max, unsigned min, int64_t timeout_us);

 private:
  int PeekLocked(fgds_cqe* cqes, unsigned max);
  bool RingRoomLocked() const;
  void PushSqeLocked(const fgds_sqe& sqe);
  void IssueChunkSqeLocked(Slot* slot);
  void HandleChunkCqeLocked(const fgds_cqe& cqe);
  void IssueDirectSqeLocked(Request* request);
  void HandleDirectCqeLocked(const fgds_cqe& cqe);
  void PollCopiesLocked();
  void PumpLocked();
  void StartChunksLocked(Request* request);
  bool BufferAliveLocked(Request* request);
  void StartCopyLocked(Slot* slot, uint64_t bytes);
  void FinishChunkLocked(Slot* slot);
  void MaybeFinishLocked(Request* request);
  direct::DeviceOps* Ops(GpuIov* iov) {
    device_->Use(iov);
    return iov->ops;
  }

  fgds_ior* const ior_;
  std::mutex mu_;
  // The device binding of the locked call in progress (its stack); every
  // DeviceOps call goes through Ops(), which binds the iov's context.
  ScopedDevice* device_ = nullptr;  // guarded by mu_
  // Requests by stage; every Request is in exactly one of these, or
  // draining (fully cut, chunks in flight, in none).
  Fifo<Request> prepared_;       // guarded by mu_
  Fifo<Request> active_;         // guarded by mu_: chunks left to start
  Fifo<Request> finished_;       // guarded by mu_: completion not yet reaped
  uint32_t prepared_count_ = 0;  // guarded by mu_
  Fifo<Slot> copies_;  // guarded by mu_: copy + event in flight, oldest first
  Fifo<Slot> write_wait_;  // guarded by mu_: copied, waiting for ring room
  bool kick_ = false;      // guarded by mu_: SQEs published since the last kick
  uint64_t bounce_retries_ = 0;  // guarded by mu_
};

inline Stager* StagerOf(const fgds_ior* ior) {
  return static_cast<Stager*>(
      __atomic_load_n(const_cast<void**>(&ior->gpu), __ATOMIC_ACQUIRE));
}

}  // namespace fgds::usrbio::gpu

#endif  // FGDS_USRBIO_GPU_STAGER_H_
