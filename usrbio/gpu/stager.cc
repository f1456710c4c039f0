// The bounce pipeline of an ior: chunks, staging slots, device copies.
#include "usrbio/gpu/stager.h"

#include <cerrno>
#include <new>

#include "usrbio/internal.h"

namespace fgds::usrbio::gpu {
namespace {

uint32_t SlotIndex(const GpuIov* iov, const Slot* slot) {
  return static_cast<uint32_t>(slot - iov->slots.data());
}

void* StagingAt(const GpuIov* iov, const Slot* slot) {
  return static_cast<char*>(iov->staging.base) + slot->staging_offset;
}

}  // namespace

Stager::~Stager() {
  // Only never-submitted requests, and finished ones nobody reaped, can
  // be left (REQUIRES of fgds_ior_destroy: nothing in flight). What is
  // still out (a dead daemon's, or a caller's who broke that) is kept on
  // purpose: the slots of chunks out never go back to the iov's free ones,
  // and requests in no list (fully cut, or direct) stay, with their hold
  // on the iov. IOR_UNREGISTER does not wait for the daemon's I/O in
  // flight, so a slot freed here could take that I/O's late bytes after
  // another request was given it.
  for (Fifo<Request>* list : {&prepared_, &active_, &finished_}) {
    while (!list->empty()) {
      Request* request = list->pop();
      // A finished request gave its iov back already (MaybeFinishLocked);
      // a second Release would wrap the iov's count and leave it owned
      // by this dead ior: -EBUSY for every other ior from then on.
      if (list != &finished_) request->iov->Release();
      delete request;
    }
  }
}

int Stager::PrepHost(const fgds_sqe& sqe) {
  std::lock_guard<std::mutex> lock(mu_);
  // The stager's chunks share the ring: a host entry needs a CQ slot that
  // no chunk holds (PrepSqe checks the SQ and in_flight).
  if (!RingRoomLocked()) return -EAGAIN;
  return PrepSqe(ior_, sqe);
}

int Stager::PrepGpu(const fgds_iov* iov, uint32_t opcode, uint32_t sqe_flags,
                    uint64_t dev, int fd_id, uint64_t file_offset, uint64_t len,
                    uint64_t userdata, bool direct) {
  std::lock_guard<std::mutex> lock(mu_);
  if (InFlight(ior_) >= ior_->cq_entries) return -EAGAIN;
  GpuIov* g = GpuOf(iov);
  auto* request = new (std::nothrow) Request(len);
  if (request == nullptr) return -ENOMEM;
  if (!g->Acquire(ior_)) {
    delete request;
    return -EBUSY;
  }
  request->iov = g;
  request->opcode = static_cast<uint8_t>(opcode);
  request->sqe_flags = static_cast<uint8_t>(sqe_flags);
  request->fd_id = static_cast<uint32_t>(fd_id);
  request->dev = dev;
  request->file_offset = file_offset;
  request->userdata = userdata;
  request->direct = direct;
  prepared_.push(request);
  ++prepared_count_;
  AddInFlight(ior_, 1);
  return 0;
}

int Stager::Submit() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t host = PublishPrepared(ior_);
  kick_ = kick_ || host > 0;
  const uint32_t gpu = prepared_count_;
  while (!prepared_.empty()) {
    Request* request = prepared_.pop();
    request->stage = Request::Stage::kActive;
    active_.push(request);
  }
  prepared_count_ = 0;
  {
    ScopedDevice device;
    device_ = &device;
    PumpLocked();
    device_ = nullptr;
  }
  if (kick_) {
    KickIfSleeping(ior_);
    kick_ = false;
  }
  return static_cast<int>(host + gpu);
}

int Stager::Peek(fgds_cqe* cqes, unsigned max) {
  std::lock_guard<std::mutex> lock(mu_);
  return PeekLocked(cqes, max);
}

int Stager::PeekLocked(fgds_cqe* cqes, unsigned max) {
  fgds_ring_header* ring = ior_->ring;
  uint32_t head = fgds_load_relaxed(&ring->cq_head.value);
  // Acquire: CQE contents the daemon wrote before publishing the tail.
  const uint32_t tail = fgds_load_acquire(&ring->cq_tail.value);
  unsigned got = 0;
  uint32_t host = 0;
  {
    ScopedDevice device;
    device_ = &device;
    while (head != tail) {
      const fgds_cqe cqe = ior_->cqes[head & (ior_->cq_entries - 1)];
      if (cqe.tag == kStagerTag) {
        HandleChunkCqeLocked(cqe);
      } else if (cqe.tag == kDirectTag) {
        HandleDirectCqeLocked(cqe);
      } else {
        if (got == max) break;
        cqes[got] = cqe;
        RejectStrayBounce(&cqes[got++]);
        ++host;
      }
      ++head;
    }
    // Release: our reads of the slots finish before the daemon may reuse
    // them.
    fgds_store_release(&ring->cq_head.value, head);
    PollCopiesLocked();
    PumpLocked();
    device_ = nullptr;
  }
  while (got < max && !finished_.empty()) {
    Request* request = finished_.pop();
    fgds_cqe& out = cqes[got++];
    out.result = request->result.Value();
    out.userdata = request->userdata;
    out.path = request->path;
    out.tag = 0;
    ++host;
    delete request;
  }
  if (host > 0) AddInFlight(ior_, -static_cast<int32_t>(host));
  // The daemon may be waiting for CQ room with submissions pending.
  if (kick_ || fgds_load_relaxed(&ring->sq_tail.value) !=
                   fgds_load_acquire(&ring->sq_head.value)) {
    KickIfSleeping(ior_);
    kick_ = false;
  }
  return static_cast<int>(got);
}

int Stager::Wait(fgds_cqe* cqes, unsigned max, unsigned min,
                 int64_t timeout_us) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (min > InFlight(ior_) - ior_->sq_pending - prepared_count_) {
      return -EINVAL;
    }
  }
  int got = Peek(cqes, max);
  const uint64_t start = NowNs();
  const uint64_t deadline =
      timeout_us < 0 ? UINT64_MAX
                     : start + static_cast<uint64_t>(timeout_us) * 1000;
  const uint64_t spin_end = start + uint64_t{ior_->spin_us} * 1000;
  while (static_cast<unsigned>(got) < min) {
    const uint64_t now = NowNs();
    if (now >= deadline) break;
    // What can make progress? A device copy in flight finishes within
    // microseconds, and the daemon's completions wait in the CQ meanwhile:
    // block on the oldest copy's event. With none, only the daemon can
    // help: sleep on the completion eventfd.
    GpuIov* copy_iov = nullptr;
    uintptr_t event = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!copies_.empty()) {
        Slot* slot = copies_.front();
        copy_iov = slot->request->iov;
        event = slot->event;
      }
    }
    if (copy_iov != nullptr) {
      // Only this (reaping) thread retires copies, so the slot and its
      // event stay as they are while we wait without the lock.
      ScopedDevice scope(copy_iov);
      copy_iov->ops->WaitEvent(event);
    } else if (now >= spin_end) {
      int ret = SleepForCompletions(ior_, deadline);
      if (ret == -ENOTCONN) {
        int last = Peek(cqes + got, max - got);
        got += last > 0 ? last : 0;
        return static_cast<unsigned>(got) >= min ? got : -ENOTCONN;
      }
      if (ret < 0) return got > 0 ? got : ret;
    }
    got += Peek(cqes + got, max - got);
  }
  return got;
}

bool Stager::RingRoomLocked() const {
  fgds_ring_header* ring = ior_->ring;
  const uint32_t end =
      fgds_load_relaxed(&ring->sq_tail.value) + ior_->sq_pending;
  // Acquire on sq_head: the daemon released the slots after copying them.
  // Every SQE ever produced gets one CQE, so produced minus reaped is what
  // the CQ must still hold.
  return end - fgds_load_acquire(&ring->sq_head.value) < ior_->sq_entries &&
         end - __atomic_load_n(&ring->cq_head.value, __ATOMIC_ACQUIRE) <
             ior_->cq_entries;
}

void Stager::PushSqeLocked(const fgds_sqe& sqe) {
  // Publishes `sqe` at once, ahead of entries the application prepared but
  // has not submitted: the first of those moves to the end of the prepared
  // run (entries carry no order), and sqe takes its slot at sq_tail.
  const uint32_t mask = ior_->sq_entries - 1;
  uint32_t* tail_ptr = &ior_->ring->sq_tail.value;
  const uint32_t tail = fgds_load_relaxed(tail_ptr);
  if (ior_->sq_pending > 0) {
    ior_->sqes[(tail + ior_->sq_pending) & mask] = ior_->sqes[tail & mask];
  }
  ior_->sqes[tail & mask] = sqe;
  // Release: the entry is written before the daemon can see the new tail.
  fgds_store_release(tail_ptr, tail + 1);
  kick_ = true;
}

void Stager::IssueChunkSqeLocked(Slot* slot) {
  Request* request = slot->request;
  fgds_sqe sqe = {};
  sqe.opcode = request->opcode;
  sqe.flags = request->sqe_flags;
  sqe.iov_id = request->iov->staging.id;
  sqe.fd_id = request->fd_id;
  sqe.tag = kStagerTag;
  sqe.iov_offset = slot->staging_offset;
  sqe.file_offset = request->file_offset + slot->offset;
  sqe.len = slot->len;
  sqe.userdata = reinterpret_cast<uintptr_t>(slot);
  slot->state = request->opcode == FGDS_OP_READ ? Slot::State::kReadIo
                                                : Slot::State::kWriteIo;
  PushSqeLocked(sqe);
}

void Stager::IssueDirectSqeLocked(Request* request) {
  GpuIov* g = request->iov;
  fgds_sqe sqe = {};
  sqe.opcode = request->opcode;
  sqe.flags = request->sqe_flags;
  sqe.iov_id = g->direct_id;
  sqe.fd_id = request->fd_id;
  sqe.tag = kDirectTag;
  // The daemon's iov starts at dev_base (DirectEntry checked the range).
  sqe.iov_offset = request->dev - g->dev_base;
  sqe.file_offset = request->file_offset;
  sqe.len = request->len;
  sqe.userdata = reinterpret_cast<uintptr_t>(request);
  request->next_byte = request->len;
  ++request->chunks;
  PushSqeLocked(sqe);
}

void Stager::HandleDirectCqeLocked(const fgds_cqe& cqe) {
  // Our own entry: userdata is the request, draining with this one SQE.
  auto* request =
      reinterpret_cast<Request*>(static_cast<uintptr_t>(cqe.userdata));
  --request->chunks;
  const bool bounce =
      cqe.result == FGDS_RESULT_BOUNCE && IsBouncePath(cqe.path);
  if (!bounce) {
    request->result.AddChunk(0, request->len, cqe.result);
    request->path = cqe.path;
    MaybeFinishLocked(request);
    return;
  }
  // Nothing of it counts (a read's bytes are not to be used; a write is
  // redone whole, the same bytes at the same offsets): it starts over on
  // the staging, still holding its iov, and completes once, as BOUNCE.
  if (cqe.path == FGDS_PATH_BOUNCE_ALWAYS) {
    request->iov->direct_failed.store(true, std::memory_order_relaxed);
  }
  ++bounce_retries_;
  request->direct = false;
  request->next_byte = 0;
  request->result = RequestResult(request->len);
  request->path = FGDS_PATH_BOUNCE;
  request->stage = Request::Stage::kActive;
  active_.push(request);
}

bool Stager::BufferAliveLocked(Request* request) {
  // As usrbio/direct: the allocation must still be the one wrapped, or the
  // copy could land in memory that now belongs to someone else.
  uint64_t id = 0;
  GpuIov* g = request->iov;
  if (Ops(g)->BufferId(request->dev, &id) == 0 && id == g->buffer_id) {
    return true;
  }
  request->result.Fail(-EFAULT);
  return false;
}

void Stager::StartCopyLocked(Slot* slot, uint64_t bytes) {
  Request* request = slot->request;
  GpuIov* g = request->iov;
  const uint64_t dev = request->dev + slot->offset;
  int ret =
      request->opcode == FGDS_OP_READ
          ? Ops(g)->CopyToDevice(dev, StagingAt(g, slot), bytes, g->stream)
          : Ops(g)->CopyToHost(StagingAt(g, slot), dev, bytes, g->stream);
  if (ret == 0) ret = Ops(g)->RecordEvent(slot->event, g->stream);
  if (ret != 0) {
    request->result.AddChunk(slot->offset, slot->len, ret);
    FinishChunkLocked(slot);
    return;
  }
  slot->state = Slot::State::kCopy;
  copies_.push(slot);
}

void Stager::HandleChunkCqeLocked(const fgds_cqe& cqe) {
  // Our own entry: userdata is the slot we issued it for.
  auto* slot = reinterpret_cast<Slot*>(static_cast<uintptr_t>(cqe.userdata));
  Request* request = slot->request;
  if (slot->state == Slot::State::kReadIo && cqe.result > 0 &&
      request->result.Wanted(slot->offset) && BufferAliveLocked(request)) {
    slot->result = cqe.result;
    // A short read (EOF) copies what it got.
    StartCopyLocked(slot, static_cast<uint64_t>(cqe.result));
    return;
  }
  request->result.AddChunk(slot->offset, slot->len, cqe.result);
  FinishChunkLocked(slot);
}

void Stager::PollCopiesLocked() {
  // One stream per iov runs its copies in order: the oldest first.
  while (!copies_.empty()) {
    Slot* slot = copies_.front();
    Request* request = slot->request;
    const int ret = Ops(request->iov)->QueryEvent(slot->event);
    if (ret == -EAGAIN) break;
    copies_.pop();
    if (ret != 0) {
      request->result.AddChunk(slot->offset, slot->len, ret);
      FinishChunkLocked(slot);
    } else if (request->opcode == FGDS_OP_READ) {
      request->result.AddChunk(slot->offset, slot->len, slot->result);
      FinishChunkLocked(slot);
    } else if (!request->result.Wanted(slot->offset)) {
      FinishChunkLocked(slot);
    } else if (RingRoomLocked()) {
      IssueChunkSqeLocked(slot);
    } else {
      slot->state = Slot::State::kWriteWait;
      write_wait_.push(slot);
    }
  }
}

void Stager::PumpLocked() {
  while (!write_wait_.empty() && RingRoomLocked()) {
    IssueChunkSqeLocked(write_wait_.pop());
  }
  // Requests start chunks in order; one whose iov has no free slot does not
  // hold back requests on other iovs.
  Fifo<Request> keep;
  while (!active_.empty()) {
    Request* request = active_.pop();
    StartChunksLocked(request);
    if (request->next_byte < request->len &&
        request->result.Wanted(request->next_byte)) {
      keep.push(request);
    } else {
      request->stage = Request::Stage::kDraining;
      MaybeFinishLocked(request);
    }
  }
  active_ = keep;
}

void Stager::StartChunksLocked(Request* request) {
  GpuIov* g = request->iov;
  // Prepared direct before the daemon said the iov never moves directly:
  // straight to the staging.
  if (request->direct && g->direct_failed.load(std::memory_order_relaxed)) {
    request->direct = false;
  }
  if (request->direct) {
    // One SQE, no slot; it waits for ring room like a read chunk.
    if (request->next_byte == 0 && RingRoomLocked()) {
      IssueDirectSqeLocked(request);
    }
    return;
  }
  while (request->next_byte < request->len &&
         request->result.Wanted(request->next_byte) && !g->free_slots.empty()) {
    const bool read = request->opcode == FGDS_OP_READ;
    if (read && !RingRoomLocked()) return;
    if (!read && !BufferAliveLocked(request)) return;
    Slot* slot = &g->slots[g->free_slots.back()];
    g->free_slots.pop_back();
    slot->request = request;
    slot->offset = request->next_byte;
    slot->len =
        io::ChunkLength(request->file_offset + request->next_byte,
                        request->len - request->next_byte, g->chunk_bytes);
    slot->result = 0;
    request->next_byte += slot->len;
    ++request->chunks;
    if (read) {
      IssueChunkSqeLocked(slot);
    } else {
      StartCopyLocked(slot, slot->len);
    }
  }
}

void Stager::FinishChunkLocked(Slot* slot) {
  Request* request = slot->request;
  slot->state = Slot::State::kFree;
  slot->request = nullptr;
  request->iov->free_slots.push_back(SlotIndex(request->iov, slot));
  --request->chunks;
  MaybeFinishLocked(request);
}

void Stager::MaybeFinishLocked(Request* request) {
  if (request->chunks != 0 || request->stage != Request::Stage::kDraining) {
    return;
  }
  request->stage = Request::Stage::kFinished;
  request->iov->Release();
  finished_.push(request);
}

}  // namespace fgds::usrbio::gpu
