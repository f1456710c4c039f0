#include "backend/local/nowait_reader.h"

#include <liburing.h>
#include <poll.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>

namespace fgds::backend {
namespace {

// Submission queue entries: reads per io_uring_enter. A ring worker's turn
// takes at most --usrbio-max-batch (16 by default) entries; larger batches
// go in several calls.
constexpr unsigned kDepth = 64;
// Registered file slots per thread: the files its rings read at once (one
// per client registration in the bench). At least kDepth, so a batch
// always finds a slot it does not use itself.
constexpr unsigned kFileSlots = 64;
// Registered buffer windows per thread (each up to kWindow pinned).
constexpr unsigned kBufferSlots = 32;
// A region is pinned in windows of this size, only those its reads touch:
// pinning faults pages in, and a client's large iov it barely uses should
// not cost the daemon that memory.
constexpr uint64_t kWindow = uint64_t{1} << 20;
// Retired keys one batch takes in; more and the thread drops everything.
constexpr size_t kRetiredPerBatch = 64;

std::atomic<bool> g_use_uring{true};
std::atomic<bool> g_use_fixed{true};

struct FileSlot {
  uint64_t key = 0;    // 0: free
  uint64_t batch = 0;  // the last batch that used it
  // The table's share of the key (registration_key.h): the owner's
  // descriptor stays open while the slot holds the file, so the last
  // reference is never this table's.
  RegistrationHold* hold = nullptr;
};
struct BufferSlot {
  uint64_t key = 0;  // 0: free
  uint64_t window = 0;
  bool registered = false;  // false: registration failed, go by address
  uint64_t batch = 0;
};

// The calling thread's ring. Closed at the thread's exit: every read it
// took completed inside the call that submitted it, so nothing is in
// flight then (and closing it drops its registrations).
class ThreadRing {
 public:
  ~ThreadRing() {
    if (ready_) io_uring_queue_exit(&ring_);
    ReleaseFileHolds();
  }
  // Sets the ring up at the first use; false: use preadv2.
  bool Usable() {
    if (!ready_ && !failed_) Setup();
    return ready_;
  }
  // Submits reads[0..n) (n <= kDepth) and reaps their completions. Returns
  // how many were submitted (their results set); the rest are the caller's
  // (the ring is then given up: see Abandon).
  size_t Read(NowaitRead* reads, size_t n);
  void ForceFallback() {
    Abandon();
    failed_ = true;
  }
  bool ready() const { return ready_; }
  bool Holds() const { return files_held_ + buffers_held_ > 0; }
  // Drops every registration (one system call per table).
  void ReleaseAll();
  NowaitFixedStats Stats() const {
    return {files_held_, RegisteredBuffers(), fixed_file_reads_,
            fixed_buffer_reads_};
  }

 private:
  void Setup() {
    io_uring_params params = {};
    // Single issuer and deferred task work: the ring is this thread's
    // alone, and completions that need task work run when it reaps them.
    // SUBMIT_ALL: one bad entry (a closed descriptor) fails alone instead
    // of stopping the submission of those after it.
    params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
                   IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    bool ok = io_uring_queue_init_params(kDepth, &ring_, &params) == 0;
    if (!ok) {
      params = {};
      params.flags = IORING_SETUP_SUBMIT_ALL;
      ok = io_uring_queue_init_params(kDepth, &ring_, &params) == 0;
    }
    if (!ok) {
      failed_ = true;
      return;
    }
    ready_ = true;
    // Nothing retired before now can be in the (empty) tables.
    retired_seen_ = RetiredCount();
    // Sparse tables, filled as reads meet files and regions; a kernel
    // without them (before 5.19) reads by descriptor and address.
    files_ok_ = io_uring_register_files_sparse(&ring_, kFileSlots) == 0;
    buffers_ok_ = io_uring_register_buffers_sparse(&ring_, kBufferSlots) == 0;
  }
  // Gives the ring up: entries the kernel did not take stay unread in its
  // submission queue and go with it, and so do its registrations.
  void Abandon() {
    if (ready_) io_uring_queue_exit(&ring_);
    ready_ = false;
    failed_ = true;
    files_ok_ = buffers_ok_ = false;
    ReleaseFileHolds();
    files_ = {};
    buffers_ = {};
    files_held_ = buffers_held_ = 0;
  }
  // Drops the registrations of keys retired since the last batch.
  void CatchUp();
  // The fixed slot for r's file or buffer; -1: by descriptor or address.
  int FileSlotFor(const NowaitRead& r);
  int BufferSlotFor(const NowaitRead& r);
  // A slot to (re)use: a free one, else the next in turn not used by this
  // batch; -1 when the batch uses them all.
  template <typename Slots>
  int Victim(const Slots& slots, unsigned* next) const;
  void DropFile(unsigned slot);
  // Gives back every file slot's share (after the kernel let go of them).
  void ReleaseFileHolds() {
    for (FileSlot& f : files_) {
      if (f.hold != nullptr) ReleaseHold(f.hold);
      f.hold = nullptr;
    }
  }
  void DropBuffer(unsigned slot);
  unsigned RegisteredBuffers() const {
    unsigned n = 0;
    for (const BufferSlot& b : buffers_) n += b.registered ? 1 : 0;
    return n;
  }

  io_uring ring_ = {};
  bool ready_ = false;
  bool failed_ = false;
  bool files_ok_ = false;
  bool buffers_ok_ = false;
  std::array<FileSlot, kFileSlots> files_ = {};
  std::array<BufferSlot, kBufferSlots> buffers_ = {};
  unsigned files_held_ = 0;
  unsigned buffers_held_ = 0;  // slots with a key, registered or not
  unsigned next_file_ = 0;     // eviction turn
  unsigned next_buffer_ = 0;
  unsigned last_file_ = 0;  // the last slot found: batches repeat files
  unsigned last_buffer_ = 0;
  uint64_t batch_ = 0;
  uint64_t retired_seen_ = 0;  // position in the retired-key log
  uint64_t fixed_file_reads_ = 0;
  uint64_t fixed_buffer_reads_ = 0;
};

template <typename Slots>
int ThreadRing::Victim(const Slots& slots, unsigned* next) const {
  const unsigned size = static_cast<unsigned>(slots.size());
  for (unsigned k = 0; k < size; ++k) {
    const unsigned i = (*next + k) % size;
    if (slots[i].key == 0) return static_cast<int>(i);
  }
  for (unsigned k = 0; k < size; ++k) {
    const unsigned i = (*next + k) % size;
    // A slot an earlier read of this batch names must keep its entry
    // until the batch is submitted.
    if (slots[i].batch != batch_) return static_cast<int>(i);
  }
  return -1;
}

void ThreadRing::DropFile(unsigned slot) {
  int fd = -1;
  io_uring_register_files_update(&ring_, slot, &fd, 1);
  if (files_[slot].hold != nullptr) ReleaseHold(files_[slot].hold);
  files_[slot] = {};
  --files_held_;
}

void ThreadRing::DropBuffer(unsigned slot) {
  if (buffers_[slot].registered) {
    iovec none = {nullptr, 0};
    __u64 tag = 0;
    io_uring_register_buffers_update_tag(&ring_, slot, &none, &tag, 1);
  }
  buffers_[slot] = {};
  --buffers_held_;
}

void ThreadRing::ReleaseAll() {
  if (files_held_ > 0) {
    std::array<int, kFileSlots> none;
    none.fill(-1);
    if (io_uring_register_files_update(&ring_, 0, none.data(), kFileSlots) <
        0) {
      // Cannot happen with a table of this size; if it does, the table
      // goes whole (and with it every file reference).
      io_uring_unregister_files(&ring_);
      files_ok_ = io_uring_register_files_sparse(&ring_, kFileSlots) == 0;
    }
    ReleaseFileHolds();
    files_ = {};
    files_held_ = 0;
  }
  if (buffers_held_ > 0) {
    std::array<iovec, kBufferSlots> none = {};
    std::array<__u64, kBufferSlots> tags = {};
    if (io_uring_register_buffers_update_tag(&ring_, 0, none.data(),
                                             tags.data(), kBufferSlots) < 0) {
      io_uring_unregister_buffers(&ring_);
      buffers_ok_ = io_uring_register_buffers_sparse(&ring_, kBufferSlots) == 0;
    }
    buffers_ = {};
    buffers_held_ = 0;
  }
}

void ThreadRing::CatchUp() {
  const uint64_t count = RetiredCount();
  if (count == retired_seen_) return;
  if (!Holds()) {
    // Whatever this thread registers from now on dies later, at a later
    // position of the log.
    retired_seen_ = count;
    return;
  }
  std::array<uint64_t, kRetiredPerBatch> keys;
  size_t got = 0;
  uint64_t to = 0;
  if (!RetiredSince(retired_seen_, &to, keys, &got)) {
    ReleaseAll();
    retired_seen_ = to;
    return;
  }
  retired_seen_ = to;
  for (size_t k = 0; k < got; ++k) {
    for (unsigned i = 0; i < kFileSlots; ++i) {
      if (files_[i].key == keys[k]) DropFile(i);
    }
    for (unsigned i = 0; i < kBufferSlots; ++i) {
      if (buffers_[i].key == keys[k]) DropBuffer(i);
    }
  }
}

int ThreadRing::FileSlotFor(const NowaitRead& r) {
  if (!files_ok_ || r.file_key == nullptr) return -1;
  const uint64_t key = r.file_key->value();
  int slot = -1;
  if (files_[last_file_].key == key) {
    slot = static_cast<int>(last_file_);
  } else {
    for (unsigned i = 0; i < kFileSlots; ++i) {
      if (files_[i].key == key) {
        slot = static_cast<int>(i);
        break;
      }
    }
  }
  if (slot < 0) {
    slot = Victim(files_, &next_file_);
    if (slot < 0) return -1;
    // Held (and so marked) first: from here on its destruction is logged,
    // so the reference this takes cannot outlive it unnoticed, and the
    // owner's descriptor stays open until this table lets go.
    RegistrationHold* hold = r.file_key->Hold();
    if (hold == nullptr) return -1;
    int fd = r.fd;
    // Replaces the slot's old file, if any (the kernel drops it).
    if (io_uring_register_files_update(&ring_, static_cast<unsigned>(slot), &fd,
                                       1) != 1) {
      ReleaseHold(hold);  // the key's own share keeps it: never the last
      return -1;          // the slot keeps what it had
    }
    if (files_[slot].key == 0) ++files_held_;
    if (files_[slot].hold != nullptr) ReleaseHold(files_[slot].hold);
    files_[slot].hold = hold;
    files_[slot].key = key;
    next_file_ = (static_cast<unsigned>(slot) + 1) % kFileSlots;
  }
  files_[slot].batch = batch_;
  last_file_ = static_cast<unsigned>(slot);
  return slot;
}

int ThreadRing::BufferSlotFor(const NowaitRead& r) {
  if (!buffers_ok_ || r.region_key == nullptr) return -1;
  const char* buf = static_cast<const char*>(r.buf);
  // The caller checked the range; a read outside its region (or across a
  // window's edge) simply goes by address.
  if (buf < r.region_base ||
      static_cast<uint64_t>(buf - r.region_base) > r.region_size ||
      r.region_size - static_cast<uint64_t>(buf - r.region_base) < r.len) {
    return -1;
  }
  const uint64_t offset = static_cast<uint64_t>(buf - r.region_base);
  const uint64_t window = offset / kWindow;
  if ((offset + r.len - 1) / kWindow != window) return -1;
  const uint64_t key = r.region_key->value();
  int slot = -1;
  auto same = [&](const BufferSlot& b) {
    return b.key == key && b.window == window;
  };
  if (same(buffers_[last_buffer_])) {
    slot = static_cast<int>(last_buffer_);
  } else {
    for (unsigned i = 0; i < kBufferSlots; ++i) {
      if (same(buffers_[i])) {
        slot = static_cast<int>(i);
        break;
      }
    }
  }
  if (slot < 0) {
    slot = Victim(buffers_, &next_buffer_);
    if (slot < 0) return -1;
    r.region_key->MarkRegistered();
    const uint64_t start = window * kWindow;
    iovec iov = {const_cast<char*>(r.region_base) + start,
                 static_cast<size_t>(
                     std::min<uint64_t>(kWindow, r.region_size - start))};
    __u64 tag = 0;
    const bool registered =
        io_uring_register_buffers_update_tag(
            &ring_, static_cast<unsigned>(slot), &iov, &tag, 1) == 1;
    BufferSlot& b = buffers_[slot];
    if (!registered && b.registered) {
      // The kernel kept the old window there: drop it, since this slot
      // now stands for a window that goes by address.
      iovec none = {nullptr, 0};
      io_uring_register_buffers_update_tag(&ring_, static_cast<unsigned>(slot),
                                           &none, &tag, 1);
    }
    if (b.key == 0) ++buffers_held_;
    // A failure is remembered too (memory that cannot be pinned is not
    // tried again on every batch); it goes with its key like the others.
    b = {key, window, registered, batch_};
    next_buffer_ = (static_cast<unsigned>(slot) + 1) % kBufferSlots;
  }
  buffers_[slot].batch = batch_;
  last_buffer_ = static_cast<unsigned>(slot);
  return buffers_[slot].registered ? slot : -1;
}

size_t ThreadRing::Read(NowaitRead* reads, size_t n) {
  ++batch_;
  const bool fixed = g_use_fixed.load(std::memory_order_relaxed);
  if (fixed) {
    CatchUp();
  } else if (Holds()) {
    ReleaseAll();
  }
  for (size_t i = 0; i < n; ++i) {
    const int file_slot = fixed ? FileSlotFor(reads[i]) : -1;
    const int buffer_slot = fixed ? BufferSlotFor(reads[i]) : -1;
    // Never null: every earlier batch was reaped whole and n <= kDepth.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    const int fd = file_slot >= 0 ? file_slot : reads[i].fd;
    if (buffer_slot >= 0) {
      io_uring_prep_read_fixed(sqe, fd, reads[i].buf, reads[i].len,
                               reads[i].offset, buffer_slot);
      ++fixed_buffer_reads_;
    } else {
      io_uring_prep_read(sqe, fd, reads[i].buf, reads[i].len, reads[i].offset);
    }
    if (file_slot >= 0) {
      sqe->flags |= IOSQE_FIXED_FILE;
      ++fixed_file_reads_;
    }
    sqe->rw_flags = RWF_NOWAIT;
    io_uring_sqe_set_data64(sqe, i);
  }
  int ret = io_uring_submit(&ring_);
  while (ret == -EINTR) ret = io_uring_submit(&ring_);
  const size_t submitted = ret > 0 ? static_cast<size_t>(ret) : 0;
  // RWF_NOWAIT reads complete inside the submission, so this finds their
  // completions at once; the wait is for the rare one that ends through
  // task work, which the reaping call runs.
  for (size_t got = 0; got < submitted;) {
    io_uring_cqe* cqe = nullptr;
    const int err = io_uring_wait_cqe(&ring_, &cqe);
    if (err != 0) {
      if (err != -EINTR && err != -EAGAIN && err != -ETIME) {
        // The kernel owns the buffers until each read completes: wait for
        // the ring to say so rather than give them back early.
        pollfd pfd = {ring_.ring_fd, POLLIN, 0};
        poll(&pfd, 1, 1);
      }
      continue;
    }
    const uint64_t index = io_uring_cqe_get_data64(cqe);
    if (index < n) reads[index].result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    ++got;
  }
  if (submitted < n) Abandon();
  return submitted;
}

thread_local ThreadRing tl_ring;

int64_t PreadNowait(const NowaitRead& read) {
  iovec iov = {read.buf, read.len};
  const ssize_t n =
      preadv2(read.fd, &iov, 1, static_cast<off_t>(read.offset), RWF_NOWAIT);
  return n >= 0 ? n : -errno;
}

}  // namespace

void ReadNowait(std::span<NowaitRead> reads) {
  size_t done = 0;
  const bool uring = g_use_uring.load(std::memory_order_relaxed);
  while (uring && done < reads.size() && tl_ring.Usable()) {
    const size_t n = std::min<size_t>(reads.size() - done, kDepth);
    done += tl_ring.Read(reads.data() + done, n);
  }
  for (; done < reads.size(); ++done) {
    reads[done].result = PreadNowait(reads[done]);
  }
}

void SetNowaitUring(bool use) {
  g_use_uring.store(use, std::memory_order_relaxed);
}

void SetNowaitFixed(bool use) {
  g_use_fixed.store(use, std::memory_order_relaxed);
}

void ReleaseNowaitRegistrations() {
  if (tl_ring.Holds()) tl_ring.ReleaseAll();
}

bool NowaitHoldsRegistrations() { return tl_ring.Holds(); }

NowaitFixedStats NowaitThreadFixedStats() { return tl_ring.Stats(); }

bool NowaitUsesUring() { return tl_ring.ready(); }

void NowaitForceFallback() { tl_ring.ForceFallback(); }

}  // namespace fgds::backend
