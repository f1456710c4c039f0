#include "fusefs/session/ring.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "common/log.h"
#include "fgds/usrbio.h"
#include "fusefs/session/sqe_check.h"

namespace fgds::session {
namespace {

// Which row of IoStats a checked entry's completion counts in, but for the
// file side, which only the backend's choice tells (FileSideOf). REQUIRES:
// the registry lock (io's references are the registry's entries).
IoStats::Kind KindOf(const fgds_sqe& sqe, const CheckedIo& io) {
  IoStats::Kind kind;
  if (io.sync) {
    kind.op = IoStats::Op::kSync;
    return kind;
  }
  kind.op = io.write ? IoStats::Op::kWrite : IoStats::Op::kRead;
  if (io.iov != nullptr && (*io.iov)->direct_only()) {
    kind.memory = IoStats::Memory::kGpuDirect;
  } else if (sqe.tag == FGDS_SQE_TAG_GPU_STAGING) {
    kind.memory = IoStats::Memory::kGpuBounce;
  }
  if (kind.memory != IoStats::Memory::kHost && io.iov != nullptr) {
    kind.gpu = (*io.iov)->gpu_slot();
  }
  return kind;
}

IoStats::FileSide FileSideOf(backend::IoPath path) {
  return path == backend::IoPath::kDirect ? IoStats::FileSide::kODirect
                                          : IoStats::FileSide::kPageCache;
}

// Whether a completion counts in IoStats: not a "bounce this entry"
// answer, whose entry the client moves again through its staging (counted
// there, as gpu-bounce), so that it is neither an error nor counted twice.
bool Counted(backend::IoPath path) { return !backend::IsBounce(path); }

// The completion's path field, in the ring ABI's terms.
uint32_t RingPath(backend::IoPath path) {
  switch (path) {
    case backend::IoPath::kDirect:
      return FGDS_PATH_DIRECT;
    case backend::IoPath::kPageCache:
      return FGDS_PATH_PAGE_CACHE;
    case backend::IoPath::kAgentTcp:
      return FGDS_PATH_TCP;
    case backend::IoPath::kAgentRdma:
      return FGDS_PATH_RDMA;
    case backend::IoPath::kBounceEntry:
      return FGDS_PATH_BOUNCE_ENTRY;
    case backend::IoPath::kBounceAlways:
      return FGDS_PATH_BOUNCE_ALWAYS;
    case backend::IoPath::kNone:
      break;
  }
  return FGDS_PATH_NONE;
}

// The ring whose batch this thread is handing to the backend: a completion
// that runs under it was served inline (RingStageStats::kInline), and is
// posted with the batch's other inline ones once SubmitIo returns
// (RingBatch::PostInline).
thread_local const Ring* tl_dispatching = nullptr;

// Whether this thread times this post (one in RingStageStats::kPostSample).
bool SamplePost() {
  thread_local uint32_t posts = 0;
  return ++posts % RingStageStats::kPostSample == 0;
}

// The backend requests of one Dispatch, in one allocation: one reference to
// the ring and to each iov and file the entries use (not one per entry),
// deleted by the last completion.
class RingBatch {
 public:
  class Op : public backend::FileIoCompletion {
   public:
    void Complete(int64_t result) override {
      CacheInvalidator* invalidator = batch->ring_->invalidator();
      if (write_node != 0 && invalidator != nullptr) {
        // Step 3 of cache_invalidator.h: readers of the mount may have
        // brought the old bytes in while the write ran; the writer hears of
        // its write only once they are gone. (A failed write may have
        // written part of its range: the whole range goes.)
        invalidator->Invalidate(write_node, offset, len,
                                [this, result] { Finish(result); });
        return;
      }
      Finish(result);
    }
    void Finish(int64_t result) {
      Ring* ring = batch->ring_.get();
      if (tl_dispatching == ring) {
        // Served on the dispatching thread, inside SubmitIo (a cached
        // read, a refusal): posted together after it returns, under one
        // CQ lock and one notification, and counted once per batch.
        inline_result = result;
        inline_done = true;
        ++batch->inline_;
        return;
      }
      IoStats* stats = ring->stats();
      // Counted before the completion is visible: whoever sees it then
      // sees it counted too.
      if (stats != nullptr && Counted(path())) {
        kind.file_side = FileSideOf(path());
        stats->Record(kind, result);
      }
      if (stats != nullptr && SamplePost()) {
        RingStageStats& stages = stats->stages();
        const uint64_t start = StageNowNs();
        ring->Post(userdata, tag, result, RingPath(path()));
        const uint64_t end = StageNowNs();
        stages.Add(RingStageStats::kPostNs,
                   (end - start) * RingStageStats::kPostSample);
        if (tl_dispatching != ring) {
          stages.Add(RingStageStats::kEngineNs,
                     (end - batch->submit_ns_) * RingStageStats::kPostSample);
          stages.Add(RingStageStats::kEngineSamples,
                     RingStageStats::kPostSample);
        }
      } else {
        ring->Post(userdata, tag, result, RingPath(path()));
      }
      batch->OpDone();
    }
    RingBatch* batch = nullptr;
    int64_t inline_result = 0;
    bool inline_done = false;
    uint64_t userdata = 0;
    uint64_t offset = 0;
    uint64_t len = 0;
    uint64_t write_node = 0;  // a write's file's node id, else 0
    uint32_t tag = 0;
    IoStats::Kind kind;
  };

  RingBatch(std::shared_ptr<Ring> ring, uint32_t capacity)
      : ring_(std::move(ring)), ops_(capacity) {}

  // Adds a checked entry; returns its completion. REQUIRES: the registry
  // lock (io's references are the registry's entries).
  Op* Add(const fgds_sqe& sqe, const CheckedIo& io) {
    Op& op = ops_[used_++];
    op.batch = this;
    op.userdata = sqe.userdata;
    op.tag = sqe.tag;
    op.offset = io.offset;
    op.len = io.len;
    op.write_node = io.write ? (*io.registered)->node : 0;
    op.kind = KindOf(sqe, io);
    CacheInvalidator* invalidator = ring_->invalidator();
    const bool dirty_possible = op.write_node != 0 && invalidator != nullptr &&
                                invalidator->may_hold_dirty_pages();
    if (dirty_possible) {
      write_ranges_.push_back({op.write_node, io.offset, io.len});
    }
    // Consecutive entries mostly share their iov and file: keep each once
    // per run (a repeat later in the batch only costs a copy).
    if (io.iov != nullptr && (iovs_.empty() || iovs_.back() != *io.iov)) {
      iovs_.push_back(*io.iov);
    }
    if (files_.empty() || files_.back() != *io.registered) {
      files_.push_back(*io.registered);
    }
    return &op;
  }
  // Called once all Adds are done, before the backend sees any request.
  void Arm() { remaining_.store(used_, std::memory_order_relaxed); }
  // When the batch went to the backend (engine latency samples).
  uint64_t submit_ns_ = 0;
  // Requests completed inline, on the dispatching thread (which alone
  // counts them, while it holds a reference: see Ring::Dispatch).
  uint32_t inline_ = 0;

  // Step 1 of cache_invalidator.h, on the ring's own thread: the mount's
  // dirty pages of this batch's write ranges are written back and dropped
  // before any of the batch starts. It blocks this ring alone (the kernel's
  // writeback goes to the FUSE threads, page locks are held by FUSE reads
  // the engine serves; neither waits for a ring), and it costs a system
  // call instead of two thread hops through the invalidator's thread, which
  // made 4 KiB random usrbio writes 11% slower (tests/device/ab_bench.sh).
  void InvalidateWriteRanges() {
    if (write_ranges_.empty()) return;
    ring_->invalidator()->InvalidateNow(write_ranges_);
  }

  // Hold/Release: the dispatching thread's own reference while it posts
  // the inline completions after SubmitIo (the last completion from
  // elsewhere would delete the batch). Release also drops the inline
  // completions' references, in the same atomic operation.
  void Hold() { remaining_.fetch_add(1, std::memory_order_relaxed); }
  void Release() { Drop(inline_ + 1); }

  // Posts the completions served inline (Op::Finish on the dispatching
  // thread): counted, then written under one CQ lock, with one
  // notification. Returns the nanoseconds the posts took when `timed`.
  uint64_t PostInline(bool timed) {
    if (inline_ == 0) return 0;
    Ring* ring = ring_.get();
    IoStats* stats = ring->stats();
    constexpr uint32_t kChunk = 64;
    fgds_cqe cqes[kChunk];
    uint32_t n = 0;
    uint64_t post_ns = 0;
    // Consecutive entries of one kind are counted together.
    IoStats::Kind run_kind;
    IoStats::Totals run;
    auto count_run = [&] {
      if (stats != nullptr && run.entries > 0) stats->RecordMany(run_kind, run);
      run = {};
    };
    auto post = [&] {
      count_run();  // counted before the completions are visible
      const uint64_t start = timed ? StageNowNs() : 0;
      ring->PostMany(cqes, n);
      if (timed) post_ns += StageNowNs() - start;
      n = 0;
    };
    for (uint32_t i = 0; i < used_; ++i) {
      Op& op = ops_[i];
      if (!op.inline_done) continue;
      if (stats != nullptr && Counted(op.path())) {
        IoStats::Kind kind = op.kind;
        kind.file_side = FileSideOf(op.path());
        if (run.entries > 0 && !(kind == run_kind)) count_run();
        run_kind = kind;
        ++run.entries;
        if (op.inline_result < 0) {
          ++run.errors;
        } else {
          run.bytes += static_cast<uint64_t>(op.inline_result);
        }
      }
      cqes[n++] =
          fgds_cqe{op.inline_result, op.userdata, RingPath(op.path()), op.tag};
      if (n == kChunk) post();
    }
    if (n > 0) post();
    count_run();
    return post_ns;
  }

 private:
  void OpDone() { Drop(1); }
  void Drop(uint32_t count) {
    // acq_rel: every op's use of the batch happens before the delete.
    if (remaining_.fetch_sub(count, std::memory_order_acq_rel) != count) {
      return;
    }
    // The batch's requests leave the ring's in-flight count together: until
    // then the posted ones count twice in Room(), which errs on the safe
    // side (less room) and saves a shared atomic per completion.
    ring_->Retire(used_);
    delete this;
  }

  const std::shared_ptr<Ring> ring_;
  std::vector<Op> ops_;  // sized once: completions point into it
  uint32_t used_ = 0;
  // Mostly one of each per batch: no allocation for them.
  absl::InlinedVector<std::shared_ptr<SharedMemory>, 2> iovs_;
  absl::InlinedVector<std::shared_ptr<RegisteredFile>, 2> files_;
  // Writes whose range the mount may hold dirty pages of.
  std::vector<CacheInvalidator::Range> write_ranges_;
  std::atomic<uint32_t> remaining_{0};
};

}  // namespace

int Ring::Create(std::shared_ptr<SharedMemory> memory, int submit_efd,
                 int complete_efd, const fgds_msg_ior_register& params,
                 std::shared_ptr<Registry> registry, backend::Backend* backend,
                 CacheInvalidator* invalidator, IoStats* stats,
                 std::shared_ptr<Ring>* out) {
  int wake_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  auto fail = [&](int err) {
    for (int fd : {submit_efd, complete_efd, wake_efd}) {
      if (fd >= 0) close(fd);
    }
    return err;
  };
  if (wake_efd < 0) return fail(-errno);
  fgds_ring_layout layout;
  if (fgds_ring_get_layout(params.entries, &layout) != 0) {
    return fail(-EINVAL);
  }
  if (memory->size() < layout.total_size) return fail(-EINVAL);
  // Read the header once; afterwards only our own copy of the layout is
  // used, whatever the client writes there.
  fgds_ring_header h;
  memcpy(&h, memory->base(), sizeof(h));
  if (h.magic != FGDS_RING_MAGIC || h.version != FGDS_RING_VERSION ||
      h.header_size != sizeof(fgds_ring_header) ||
      h.sqe_size != sizeof(fgds_sqe) || h.cqe_size != sizeof(fgds_cqe) ||
      h.sq_entries != layout.sq_entries || h.cq_entries != layout.cq_entries ||
      h.sq_offset != layout.sq_offset || h.cq_offset != layout.cq_offset ||
      h.total_size != layout.total_size || h.reserved0 != 0) {
    return fail(-EINVAL);
  }
  // Honest clients never block on these. Nothing relies on it: a client
  // can clear O_NONBLOCK again at any time (client_eventfd.h).
  for (int fd : {submit_efd, complete_efd}) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      return fail(-EINVAL);
    }
  }
  Ring* ring = new (std::nothrow)
      Ring(std::move(memory), layout, submit_efd, complete_efd, wake_efd,
           params, std::move(registry), backend, invalidator, stats);
  if (ring == nullptr) return fail(-ENOMEM);
  out->reset(ring);
  return 0;
}

Ring::Ring(std::shared_ptr<SharedMemory> memory, const fgds_ring_layout& layout,
           int submit_efd, int complete_efd, int wake_efd,
           const fgds_msg_ior_register& params,
           std::shared_ptr<Registry> registry, backend::Backend* backend,
           CacheInvalidator* invalidator, IoStats* stats)
    : memory_(std::move(memory)),
      header_(reinterpret_cast<fgds_ring_header*>(memory_->base())),
      sqes_(reinterpret_cast<const fgds_sqe*>(memory_->base() +
                                              layout.sq_offset)),
      cqes_(reinterpret_cast<fgds_cqe*>(memory_->base() + layout.cq_offset)),
      sq_entries_(layout.sq_entries),
      cq_entries_(layout.cq_entries),
      submit_efd_(submit_efd),
      complete_efd_(complete_efd),
      wake_efd_(wake_efd),
      flags_(params.flags),
      io_depth_(std::min(params.io_depth, layout.sq_entries)),
      timeout_ns_(uint64_t{params.timeout_us} * 1000),
      requested_spin_ns_(uint64_t{params.spin_us} * 1000),
      registry_(std::move(registry)),
      backend_(backend),
      invalidator_(invalidator),
      stats_(stats) {
  // Start from wherever the client's indexes are (zero for a fresh ring).
  sq_head_.store(fgds_load_acquire(&header_->sq_head.value),
                 std::memory_order_relaxed);
  fgds::SpinLockHolder lock(&cq_mu_);
  cq_tail_ = fgds_load_acquire(&header_->cq_tail.value);
}

Ring::~Ring() {
  for (int fd : {submit_efd_, complete_efd_, wake_efd_}) close(fd);
}

int Ring::Start(RingWorkerPool* pool) {
  spin_ns_ = std::min(requested_spin_ns_, pool->max_spin_ns());
  max_batch_ = std::max(pool->max_batch(), 1u);
  inline_reads_ = pool->inline_reads();
  max_helpers_ = pool->max_helpers();
  help_pool_ = max_helpers_ > 0 ? pool : nullptr;
  int ret = pool->Attach(shared_from_this());
  if (ret == 0) pool_ = pool;
  return ret;
}

void Ring::Stop() {
  if (pool_ == nullptr) return;
  {
    // No helper takes anything from here on; those past a take finish
    // their dispatch first.
    fgds::SpinLockHolder lock(&take_mu_);
    stopped_ = true;
  }
  pool_->Detach(this);
  pool_ = nullptr;
  // A helper's dispatch is as short as the owner's turn (it blocks at
  // worst on a client's completion eventfd, until the watchdog undoes the
  // write).
  while (helpers_.load(std::memory_order_acquire) != 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void Ring::PostMany(const fgds_cqe* cqes, uint32_t count) {
  if (count == 0) return;
  {
    fgds::SpinLockHolder lock(&cq_mu_);
    for (uint32_t i = 0; i < count; ++i) {
      cqes_[(cq_tail_ + i) & (cq_entries_ - 1)] = cqes[i];
    }
    cq_tail_ += count;
    // Release: the CQEs above are complete before the tail that publishes
    // them.
    fgds_store_release(&header_->cq_tail.value, cq_tail_);
  }
  // As in Post.
  if (!notify_pending_.exchange(true, std::memory_order_seq_cst) &&
      sleeping_.load(std::memory_order_seq_cst)) {
    SignalOwnEventfd(wake_efd_);
  }
}

void Ring::Post(uint64_t userdata, uint32_t tag, int64_t result,
                uint32_t path) {
  {
    fgds::SpinLockHolder lock(&cq_mu_);
    fgds_cqe* cqe = &cqes_[cq_tail_ & (cq_entries_ - 1)];
    cqe->result = result;
    cqe->userdata = userdata;
    cqe->path = path;
    cqe->tag = tag;
    ++cq_tail_;
    // Release: the CQE above is complete before the tail that publishes it.
    fgds_store_release(&header_->cq_tail.value, cq_tail_);
  }
  // Dekker with the worker's Sleep (sleeping_ then notify_pending_): either
  // it sees the pending notification or we see it asleep and wake it.
  if (!notify_pending_.exchange(true, std::memory_order_seq_cst) &&
      sleeping_.load(std::memory_order_seq_cst)) {
    SignalOwnEventfd(wake_efd_);
  }
}

void Ring::Retire(uint32_t count) {
  inflight_.fetch_sub(count, std::memory_order_seq_cst);
  // A worker that stopped for want of CQ room waits for this (Dekker with
  // WorkerLoop: it sets starved_, then re-checks Room()).
  if (starved_.load(std::memory_order_seq_cst)) SignalOwnEventfd(wake_efd_);
}

uint32_t Ring::Room() const {
  // inflight_ first: a completion publishes its CQE before leaving
  // inflight_, so reading in this order can count one twice (less room),
  // never zero times (an overwritten CQE).
  const uint32_t inflight = inflight_.load(std::memory_order_acquire);
  const uint32_t published = fgds_load_acquire(&header_->cq_tail.value);
  // Acquire: pairs with the client's release after it read the CQEs.
  const uint32_t head = fgds_load_acquire(&header_->cq_head.value);
  const uint32_t unreaped = published - head;
  // A cq_head the client corrupted gives a nonsense count: stall this ring
  // (the client's own) rather than overwrite anything.
  if (unreaped > cq_entries_) return 0;
  const uint64_t used = uint64_t{unreaped} + inflight;
  return used >= cq_entries_ ? 0 : cq_entries_ - static_cast<uint32_t>(used);
}

void Ring::DeliverNotify(EventfdWriteWatch* watch) {
  if (!notify_pending_.exchange(false, std::memory_order_seq_cst)) return;
  if (notify_broken_.load(std::memory_order_relaxed)) return;
  // Pairs with the client's (set CQ_WAITING; fence; read cq_tail) in
  // fgds_ior_wait: either it sees the completions or we see its flag.
  fgds_full_fence();
  const uint32_t flags = fgds_load_relaxed(&header_->cq_head.flags);
  if ((flags & (FGDS_RING_CQ_WAITING | FGDS_RING_CQ_ALWAYS_NOTIFY)) == 0) {
    return;
  }
  const uint64_t start = stats_ != nullptr ? StageNowNs() : 0;
  if (!watch->Signal(complete_efd_)) {
    notify_broken_.store(true, std::memory_order_relaxed);
    LogWarning(
        "usrbio ring: the client made its completion eventfd block; it is "
        "not signalled any more");
  }
  if (stats_ != nullptr) {
    stats_->stages().Add(RingStageStats::kNotifies, 1);
    stats_->stages().Add(RingStageStats::kNotifyNs, StageNowNs() - start);
  }
}

bool Ring::Woken(uint32_t seen_tail) const {
  return fgds_load_acquire(&header_->sq_tail.value) != seen_tail ||
         notify_pending_.load(std::memory_order_seq_cst) ||
         // Waiting for CQ room: the client reaping makes it, and kicks
         // only if it sees NEED_WAKEUP (its store cq_head; fence; read the
         // flag in fgds_ior_peek). Re-checking the room here, also after
         // our flag and fence, is our half of that handshake; without it a
         // reap just before the flag went up was lost and the ring slept
         // with entries waiting and room for them.
         (starved_.load(std::memory_order_relaxed) && Room() > 0);
}

bool Ring::TrySleep(uint32_t seen_tail) {
  sleeping_.store(true, std::memory_order_seq_cst);
  fgds_store_relaxed(&header_->sq_head.flags, FGDS_RING_SQ_NEED_WAKEUP);
  // Pairs with the client's (publish sq_tail; fence; read NEED_WAKEUP) in
  // fgds_ior_submit: either it sees our flag and kicks, or we see its tail.
  fgds_full_fence();
  if (!Woken(seen_tail)) return true;
  fgds_store_relaxed(&header_->sq_head.flags, 0);
  sleeping_.store(false, std::memory_order_relaxed);
  return false;
}

void Ring::FailAll(const Scratch& scratch, uint32_t count, int err) {
  for (uint32_t i = 0; i < count; ++i) {
    if (stats_ != nullptr) stats_->RecordRejected();
    Post(scratch.sqe_copies[i].userdata, scratch.sqe_copies[i].tag, err,
         FGDS_PATH_NONE);
  }
  Retire(count);
}

bool Ring::Scratch::Reserve(uint32_t entries) {
  if (sqe_copies.size() >= entries) return true;
  try {
    sqe_copies.resize(entries);
    requests.reserve(entries);
    failed.reserve(entries);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

uint32_t Ring::Take(uint32_t max, uint32_t min_avail, bool helper,
                    Scratch* scratch, uint32_t* left) {
  // Sized for a whole ring at the first batch, so that only the batch
  // below allocates per call. Without it not a single entry can be
  // copied: they stay in the SQ for the next round.
  if (!scratch->Reserve(sq_entries_)) return 0;
  fgds::SpinLockHolder lock(&take_mu_);
  if (stopped_) return 0;
  const uint32_t head = sq_head_.load(std::memory_order_relaxed);
  const uint32_t tail = fgds_load_acquire(&header_->sq_tail.value);
  // A tail more than a ring ahead is a broken client: take one ring's
  // worth; the rest is garbage it wrote itself.
  const uint32_t avail = std::min(tail - head, sq_entries_);
  if (avail == 0 || avail < min_avail) return 0;
  const uint32_t count = std::min({avail, Room(), max});
  if (count == 0) return 0;
  for (uint32_t i = 0; i < count; ++i) {
    // The one read of each slot: validation and I/O use only this copy.
    memcpy(&scratch->sqe_copies[i], &sqes_[(head + i) & (sq_entries_ - 1)],
           sizeof(fgds_sqe));
  }
  sq_head_.store(head + count, std::memory_order_relaxed);
  // Release: the copies above are done before the client may refill.
  fgds_store_release(&header_->sq_head.value, head + count);
  // Their CQ slots, reserved before the next taker computes Room();
  // released as each batch retires (failures right after their posts).
  inflight_.fetch_add(count, std::memory_order_relaxed);
  if (helper) helpers_.fetch_add(1, std::memory_order_relaxed);
  if (left != nullptr) *left = avail - count;
  return count;
}

void Ring::TakeAndDispatch(uint32_t max) {
  const uint64_t take_start = stats_ != nullptr ? StageNowNs() : 0;
  const uint32_t count = Take(max, 1, false, &scratch_);
  if (count == 0) return;
  if (stats_ != nullptr) {
    stats_->stages().Add(RingStageStats::kTakeNs, StageNowNs() - take_start);
  }
  Dispatch(&scratch_, count);
}

bool Ring::Help(EventfdWriteWatch* watch) {
  thread_local Scratch scratch;
  const uint64_t take_start = stats_ != nullptr ? StageNowNs() : 0;
  const uint32_t min_avail = std::max(io_depth_, 1u);
  uint32_t left = 0;
  const uint32_t count = Take(max_batch_, min_avail, true, &scratch, &left);
  if (count == 0) return false;
  MaybeWantHelp(left);
  if (stats_ != nullptr) {
    stats_->stages().Add(RingStageStats::kTakeNs, StageNowNs() - take_start);
    stats_->stages().Add(RingStageStats::kHelped, count);
  }
  Dispatch(&scratch, count);
  helpers_.fetch_sub(1, std::memory_order_release);
  DeliverNotify(watch);
  return true;
}

void Ring::MaybeWantHelp(uint32_t left) {
  if (help_pool_ == nullptr || left < std::max(max_batch_ / 2, 1u)) return;
  uint32_t asked = helpers_asked_.load(std::memory_order_relaxed);
  do {
    if (asked >= max_helpers_) return;
  } while (!helpers_asked_.compare_exchange_weak(asked, asked + 1,
                                                 std::memory_order_acq_rel));
  if (!help_pool_->WantHelp(weak_from_this())) HelpDone();
}

void Ring::Dispatch(Scratch* scratch, uint32_t count) {
  const uint64_t check_start = stats_ != nullptr ? StageNowNs() : 0;
  // Counted before any of these entries is posted: a client that has
  // reaped every completion then reads counters that include them.
  if (stats_ != nullptr) {
    stats_->stages().Add(RingStageStats::kEntries, count);
    stats_->stages().Add(RingStageStats::kBatches, 1);
  }
  RingBatch* batch = nullptr;
  try {
    batch = new RingBatch(shared_from_this(), count);
  } catch (const std::bad_alloc&) {
    FailAll(*scratch, count, -ENOMEM);
    return;
  }
  std::vector<backend::FileIoRequest>& requests = scratch->requests;
  std::vector<Failed>& failed = scratch->failed;
  requests.clear();
  failed.clear();
  {
    fgds::ReaderMutexLock lock(&registry_->mu());
    for (uint32_t i = 0; i < count; ++i) {
      const fgds_sqe& sqe = scratch->sqe_copies[i];
      CheckedIo io;
      int err = CheckSqe(sqe, *registry_, flags_, &io);
      if (err != 0) {
        failed.push_back({sqe.userdata, sqe.tag, err});
        continue;
      }
      // One page cache with the mount's passthrough files: host writes
      // go through it (cache_invalidator.h, SharesBackingCache).
      if (io.write && (io.flags & backend::kIoPreferDirect) &&
          invalidator_ != nullptr &&
          (io.region == nullptr ||
           io.region->kind() == backend::MemoryRegion::Kind::kHost) &&
          invalidator_->SharesBackingCache(backend_->NodeOf(io.file))) {
        io.flags &= ~backend::kIoPreferDirect;
      }
      backend::FileOp op =
          io.write ? backend::FileOp::kWrite : backend::FileOp::kRead;
      if (io.sync) {
        op =
            io.datasync ? backend::FileOp::kFdatasync : backend::FileOp::kFsync;
      }
      // Reads of cached pages are copied on this thread, inside SubmitIo:
      // for 4 KiB a hand-off to an engine thread and its wakeups cost more
      // than the copy, and the engine's shared queues stop scaling with
      // clients (docs/usrbio.md, "Where the time goes").
      const uint32_t flags = op == backend::FileOp::kRead && inline_reads_
                                 ? io.flags | backend::kIoInlineIfCached
                                 : io.flags;
      requests.push_back(backend::FileIoRequest{op, io.file, io.region, io.buf,
                                                io.len, io.offset, flags,
                                                batch->Add(sqe, io)});
    }
  }
  for (const Failed& f : failed) {
    if (stats_ != nullptr) stats_->RecordRejected();
    Post(f.userdata, f.tag, f.err, FGDS_PATH_NONE);
  }
  // Their reserved slots go once posted; the batch's go when it retires.
  if (!failed.empty()) Retire(static_cast<uint32_t>(failed.size()));
  if (requests.empty()) {
    delete batch;
    return;
  }
  batch->Arm();
  // Writes start only once the mount holds no dirty page of their ranges
  // (cache_invalidator.h, step 1).
  batch->InvalidateWriteRanges();
  const uint64_t submit_start = stats_ != nullptr ? StageNowNs() : 0;
  batch->submit_ns_ = submit_start;
  // The batch stays alive through SubmitIo and the inline posts: one more
  // completion, ours, is owed until then.
  batch->Hold();
  tl_dispatching = this;
  backend_->SubmitIo(requests);
  tl_dispatching = nullptr;
  const uint64_t submit_end = stats_ != nullptr ? StageNowNs() : 0;
  const uint32_t served_inline = batch->inline_;
  if (stats_ != nullptr) {
    stats_->stages().Add(RingStageStats::kInline, served_inline);
  }
  const uint64_t post_ns = batch->PostInline(stats_ != nullptr);
  batch->Release();
  if (stats_ == nullptr) return;
  RingStageStats& stages = stats_->stages();
  if (served_inline > 0) stages.Add(RingStageStats::kPostNs, post_ns);
  stages.Add(RingStageStats::kTakeNs, submit_start - check_start);
  stages.Add(RingStageStats::kSubmitNs, submit_end - submit_start);
}

Ring::Turn Ring::Serve(EventfdWriteWatch* watch, uint64_t now_ns) {
  if (sleeping_.load(std::memory_order_relaxed)) {
    // Awake: submits need not kick until we sleep again.
    fgds_store_relaxed(&header_->sq_head.flags, 0);
    sleeping_.store(false, std::memory_order_relaxed);
    if (stats_ != nullptr) stats_->stages().Add(RingStageStats::kWakeups, 1);
  }
  starved_.store(false, std::memory_order_relaxed);
  for (;;) {
    DeliverNotify(watch);
    const uint32_t tail = fgds_load_acquire(&header_->sq_tail.value);
    // A tail more than a ring ahead is a broken client: take one ring's
    // worth; the rest is garbage it wrote itself.
    const uint32_t avail =
        std::min(tail - sq_head_.load(std::memory_order_relaxed), sq_entries_);
    if (avail > 0 && avail < io_depth_) {
      if (batch_start_ns_ == 0) batch_start_ns_ = now_ns;
      // The deadline: a partial batch waits at most timeout_ns_.
      const uint64_t deadline = batch_start_ns_ + timeout_ns_;
      if (now_ns < deadline) {
        if (TrySleep(tail)) return {Turn::kUntil, deadline};
        now_ns = MonotonicNs();
        continue;
      }
    }
    uint32_t take = std::min(avail, Room());
    if (take == 0 && avail > 0) {
      // No CQ room: it comes back when the client reaps (it kicks us) or
      // when a batch retires (Retire wakes us while starved_ is set).
      starved_.store(true, std::memory_order_seq_cst);
      fgds_full_fence();
      take = std::min(avail, Room());
      if (take == 0) {
        if (TrySleep(tail)) return {Turn::kAsleep, 0};
        starved_.store(false, std::memory_order_relaxed);
        continue;
      }
      starved_.store(false, std::memory_order_relaxed);
    }
    if (take == 0) {
      // Spin only after a batch, never after a kick that brought nothing:
      // a client that sleeps or only kicks costs no polling.
      if (spin_ns_ > 0 && now_ns < last_dispatch_ns_ + spin_ns_) {
        return {Turn::kAgain, 0};
      }
      if (TrySleep(tail)) return {Turn::kAsleep, 0};
      continue;
    }
    batch_start_ns_ = 0;
    last_dispatch_ns_ = now_ns;
    // At most max_batch_ entries per turn: cached reads complete inside
    // Dispatch, and a waiting client hears of the first ones (just below)
    // while the worker copies the rest of its queue on the next turn, so
    // client and worker overlap instead of taking turns.
    const uint32_t batch = std::min(take, max_batch_);
    // More than a turn's worth waits: an idle worker may take some while
    // this one copies its batch (asked first, so that its wakeup overlaps
    // the copy).
    MaybeWantHelp(avail - batch);
    TakeAndDispatch(batch);
    // Inline completions are posted already: the client need not wait for
    // the worker's next round to hear of them.
    DeliverNotify(watch);
    // One batch per turn: the worker's other rings get theirs.
    return {Turn::kAgain, 0};
  }
}

}  // namespace fgds::session
