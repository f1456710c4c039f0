// usrbio iors: creating a ring, preparing and submitting entries, reaping
// completions, and waiting without losing a wakeup or hanging on a dead
// daemon.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "usrbio/gpu/gpu_iov.h"
#include "usrbio/gpu/stager.h"
#include "usrbio/internal.h"

namespace fgds::usrbio {
namespace {

constexpr uint32_t kDefaultEntries = 256;
constexpr uint32_t kDefaultTimeoutUs = 100;

bool ParamsValid(const fgds_ior_params& p) {
  for (uint64_t r : p.reserved) {
    if (r != 0) return false;
  }
  return (p.flags & ~FGDS_IOR_VALID_FLAGS) == 0 && p.priority >= -1 &&
         p.priority <= 1 && p.spin_us <= 1000000;
}

void WriteHeader(fgds_ring_header* h, const fgds_ring_layout& layout) {
  h->magic = FGDS_RING_MAGIC;
  h->version = FGDS_RING_VERSION;
  h->header_size = sizeof(fgds_ring_header);
  h->sqe_size = sizeof(fgds_sqe);
  h->cqe_size = sizeof(fgds_cqe);
  h->sq_entries = layout.sq_entries;
  h->cq_entries = layout.cq_entries;
  h->sq_offset = layout.sq_offset;
  h->cq_offset = layout.cq_offset;
  h->total_size = layout.total_size;
}

}  // namespace

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

// Wakes the daemon's worker if it sleeps. The full fence pairs with the
// worker's (set NEED_WAKEUP; fence; re-read sq_tail): either it sees our new
// tail or we see its flag.
void KickIfSleeping(fgds_ior* ior) {
  fgds_full_fence();
  if (fgds_load_relaxed(&ior->ring->sq_head.flags) & FGDS_RING_SQ_NEED_WAKEUP) {
    uint64_t one = 1;
    // A full counter (EAGAIN) already means "wake up".
    (void)!write(ior->submit_efd, &one, sizeof(one));
  }
}

int PrepSqe(fgds_ior* ior, const fgds_sqe& sqe) {
  fgds_ring_header* ring = ior->ring;
  const uint32_t tail =
      fgds_load_relaxed(&ring->sq_tail.value) + ior->sq_pending;
  // Acquire: the daemon released these slots after copying them out.
  if (tail - fgds_load_acquire(&ring->sq_head.value) >= ior->sq_entries ||
      InFlight(ior) >= ior->cq_entries) {
    return -EAGAIN;
  }
  ior->sqes[tail & (ior->sq_entries - 1)] = sqe;
  // sq_pending: written by the submitting thread only; atomic because
  // fgds_ior_wait reads it on the reaping thread.
  __atomic_store_n(&ior->sq_pending, ior->sq_pending + 1, __ATOMIC_RELAXED);
  AddInFlight(ior, 1);
  return 0;
}

uint32_t PublishPrepared(fgds_ior* ior) {
  const uint32_t n = ior->sq_pending;
  if (n == 0) return 0;
  uint32_t* tail = &ior->ring->sq_tail.value;
  // Release: the SQE contents written by prep are visible to the daemon
  // before it can see the new tail.
  fgds_store_release(tail, fgds_load_relaxed(tail) + n);
  __atomic_store_n(&ior->sq_pending, 0u, __ATOMIC_RELAXED);
  return n;
}

int SleepForCompletions(fgds_ior* ior, uint64_t deadline_ns) {
  fgds_ring_header* ring = ior->ring;
  const uint32_t sticky =
      fgds_load_relaxed(&ring->cq_head.flags) & FGDS_RING_CQ_ALWAYS_NOTIFY;
  // Announce that we sleep, then re-check: the fence pairs with the
  // daemon's (publish cq_tail; fence; read CQ flags), so either it sees
  // CQ_WAITING and writes the eventfd, or we see its completions.
  fgds_store_relaxed(&ring->cq_head.flags, sticky | FGDS_RING_CQ_WAITING);
  fgds_full_fence();
  int result = 0;
  if (fgds_load_acquire(&ring->cq_tail.value) ==
      fgds_load_relaxed(&ring->cq_head.value)) {
    pollfd fds[2] = {{ior->complete_efd, POLLIN, 0},
                     {ior->session->sock, POLLRDHUP, 0}};
    const uint64_t now = NowNs();
    const uint64_t left_ns = deadline_ns > now ? deadline_ns - now : 0;
    timespec ts = {static_cast<time_t>(left_ns / 1000000000u),
                   static_cast<long>(left_ns % 1000000000u)};
    int ret = ppoll(fds, 2, deadline_ns == UINT64_MAX ? nullptr : &ts, nullptr);
    if (ret < 0 && errno != EINTR) result = -errno;
    if (ret > 0 && (fds[0].revents & POLLIN)) {
      uint64_t count;
      (void)!read(ior->complete_efd, &count, sizeof(count));
    }
    if (ret > 0 && (fds[1].revents & (POLLHUP | POLLRDHUP | POLLERR))) {
      result = -ENOTCONN;
    }
  }
  fgds_store_relaxed(&ring->cq_head.flags, sticky);
  return result;
}

}  // namespace fgds::usrbio

using fgds::usrbio::ErrnoSaver;

extern "C" int fgds_ior_create(struct fgds_session* session,
                               struct fgds_ior* ior,
                               const struct fgds_ior_params* params) noexcept {
  ErrnoSaver saver;
  if (session == nullptr || ior == nullptr) return -EINVAL;
  fgds_ior_params p = {};
  if (params != nullptr) p = *params;
  if (!fgds::usrbio::ParamsValid(p)) return -EINVAL;
  if (p.entries == 0) p.entries = fgds::usrbio::kDefaultEntries;
  if (p.io_depth > 1 && p.timeout_us == 0) {
    p.timeout_us = fgds::usrbio::kDefaultTimeoutUs;
  }
  fgds_ring_layout layout;
  int ret = fgds_ring_get_layout(p.entries, &layout);
  if (ret != 0) return ret;

  int memfd = memfd_create("fgds-ior", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (memfd < 0) return -errno;
  int submit_efd = -1;
  int complete_efd = -1;
  void* map = MAP_FAILED;
  uint32_t id = 0;
  // Every page allocated here, charged to this process: the daemon posts
  // completions into this memory and maps only memory its owner paid for
  // (docs/limits.md).
  if (ftruncate(memfd, static_cast<off_t>(layout.total_size)) != 0 ||
      fallocate(memfd, 0, 0, static_cast<off_t>(layout.total_size)) != 0 ||
      fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    ret = -errno;
    goto close_memfd;
  }
  map = mmap(nullptr, layout.total_size, PROT_READ | PROT_WRITE, MAP_SHARED,
             memfd, 0);
  if (map == MAP_FAILED) {
    ret = -errno;
    goto close_memfd;
  }
  fgds::usrbio::WriteHeader(static_cast<fgds_ring_header*>(map), layout);
  submit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  complete_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (submit_efd < 0 || complete_efd < 0) {
    ret = -errno;
    goto close_efds;
  }
  {
    fgds_msg_ior_register msg = {};
    msg.entries = p.entries;
    msg.flags = p.flags;
    msg.io_depth = p.io_depth;
    msg.timeout_us = p.timeout_us;
    msg.priority = p.priority;
    msg.spin_us = p.spin_us;
    int fds[3] = {memfd, submit_efd, complete_efd};
    ret = fgds::usrbio::Exchange(session, FGDS_MSG_IOR_REGISTER, &msg,
                                 sizeof(msg), fds, 3, &id);
  }
  if (ret != 0) goto close_efds;

  memset(ior, 0, sizeof(*ior));
  ior->ring = static_cast<fgds_ring_header*>(map);
  ior->sqes =
      reinterpret_cast<fgds_sqe*>(static_cast<char*>(map) + layout.sq_offset);
  ior->cqes =
      reinterpret_cast<fgds_cqe*>(static_cast<char*>(map) + layout.cq_offset);
  ior->sq_entries = layout.sq_entries;
  ior->cq_entries = layout.cq_entries;
  ior->id = id;
  ior->spin_us = p.spin_us;
  ior->map_size = layout.total_size;
  ior->memfd = memfd;
  ior->submit_efd = submit_efd;
  ior->complete_efd = complete_efd;
  ior->flags = p.flags;
  ior->session = session;
  return 0;

close_efds:
  if (submit_efd >= 0) close(submit_efd);
  if (complete_efd >= 0) close(complete_efd);
  munmap(map, layout.total_size);
close_memfd:
  close(memfd);
  return ret;
}

extern "C" int fgds_ior_destroy(struct fgds_ior* ior) noexcept {
  ErrnoSaver saver;
  if (ior == nullptr || ior->session == nullptr) return -EINVAL;
  delete fgds::usrbio::gpu::StagerOf(ior);
  ior->gpu = nullptr;
  int ret =
      fgds::usrbio::Unregister(ior->session, FGDS_MSG_IOR_UNREGISTER, ior->id);
  munmap(ior->ring, ior->map_size);
  close(ior->memfd);
  close(ior->submit_efd);
  close(ior->complete_efd);
  ior->ring = nullptr;
  ior->session = nullptr;
  return ret;
}

extern "C" int fgds_prep_io(struct fgds_ior* ior, const struct fgds_iov* iov,
                            uint32_t opcode, uint32_t sqe_flags, void* buf,
                            int fd_id, uint64_t file_offset, uint64_t len,
                            uint64_t userdata) noexcept {
  using fgds::usrbio::gpu::Stager;
  if (ior == nullptr || iov == nullptr || iov->session != ior->session) {
    return -EINVAL;
  }
  if ((opcode != FGDS_OP_READ && opcode != FGDS_OP_WRITE) ||
      (sqe_flags & ~FGDS_SQE_BUFFERED) != 0 || fd_id < 0 || len == 0) {
    return -EINVAL;
  }
  // Overflow-safe "buf + len inside the iov" (the daemon checks again).
  const auto start = reinterpret_cast<uintptr_t>(buf);
  const auto base = reinterpret_cast<uintptr_t>(iov->base);
  if (start < base || start - base > iov->size ||
      len > iov->size - (start - base)) {
    return -EINVAL;
  }
  Stager* stager = fgds::usrbio::gpu::StagerOf(ior);
  uint32_t iov_id = iov->id;
  const fgds::usrbio::gpu::GpuIov* gpu = fgds::usrbio::gpu::GpuOf(iov);
  if (gpu != nullptr &&
      fgds::usrbio::gpu::MappedEntry(gpu, start, file_offset, len, sqe_flags,
                                     ior->flags)) {
    // The daemon mapped this GPU memory: the entry is an ordinary one on
    // the mapping's iov (no stager, no staging, no copy, no owner: any ior
    // may have such entries in flight; completes FGDS_PATH_DIRECT). The
    // daemon's iov starts at the GPU iov's base, as this one does.
    iov_id = gpu->direct_id;
  } else if (gpu != nullptr) {
    // A NIC-only iov's way to this GPU memory when it has one (DirectEntry:
    // one entry on its iov id, no staging, no copy; completes with the
    // daemon's path, or starts over on the staging if the daemon answers
    // "bounce this entry"); else the staging. Both through the stager.
    const bool direct = fgds::usrbio::gpu::DirectEntry(
        gpu, start, file_offset, len, sqe_flags, ior->flags);
    if (stager == nullptr) {
      // The first GPU entry of this ior. Only the submitting thread gets
      // here; the release store publishes the stager to the reaping thread,
      // and from now on both go through its lock.
      stager = new (std::nothrow) Stager(ior);
      if (stager == nullptr) return -ENOMEM;
      __atomic_store_n(&ior->gpu, static_cast<void*>(stager), __ATOMIC_RELEASE);
    }
    return stager->PrepGpu(iov, opcode, sqe_flags, start, fd_id, file_offset,
                           len, userdata, direct);
  }
  fgds_sqe sqe = {};
  sqe.opcode = static_cast<uint8_t>(opcode);
  sqe.flags = static_cast<uint8_t>(sqe_flags);
  sqe.iov_id = iov_id;
  sqe.fd_id = static_cast<uint32_t>(fd_id);
  sqe.tag = 0;
  sqe.iov_offset = start - base;
  sqe.file_offset = file_offset;
  sqe.len = len;
  sqe.userdata = userdata;
  if (stager != nullptr) return stager->PrepHost(sqe);
  return fgds::usrbio::PrepSqe(ior, sqe);
}

extern "C" int fgds_prep_fsync(struct fgds_ior* ior, int fd_id,
                               uint32_t sqe_flags, uint64_t userdata) noexcept {
  if (ior == nullptr || ior->ring == nullptr || fd_id < 0 ||
      (sqe_flags & ~FGDS_SQE_DATASYNC) != 0) {
    return -EINVAL;
  }
  fgds_sqe sqe = {};
  sqe.opcode = FGDS_OP_FSYNC;
  sqe.flags = static_cast<uint8_t>(sqe_flags);
  sqe.fd_id = static_cast<uint32_t>(fd_id);
  sqe.userdata = userdata;
  if (auto* stager = fgds::usrbio::gpu::StagerOf(ior)) {
    return stager->PrepHost(sqe);
  }
  return fgds::usrbio::PrepSqe(ior, sqe);
}

extern "C" int fgds_ior_submit(struct fgds_ior* ior) noexcept {
  ErrnoSaver saver;
  if (ior == nullptr || ior->ring == nullptr) return -EINVAL;
  if (auto* stager = fgds::usrbio::gpu::StagerOf(ior)) return stager->Submit();
  const uint32_t n = fgds::usrbio::PublishPrepared(ior);
  if (n == 0) return 0;
  fgds::usrbio::KickIfSleeping(ior);
  return static_cast<int>(n);
}

extern "C" int fgds_ior_peek(struct fgds_ior* ior, struct fgds_cqe* cqes,
                             unsigned max) noexcept {
  if (ior == nullptr || ior->ring == nullptr || (cqes == nullptr && max)) {
    return -EINVAL;
  }
  if (auto* stager = fgds::usrbio::gpu::StagerOf(ior)) {
    ErrnoSaver saver;
    return stager->Peek(cqes, max);
  }
  fgds_ring_header* ring = ior->ring;
  const uint32_t head = fgds_load_relaxed(&ring->cq_head.value);
  // Acquire: CQE contents the daemon wrote before publishing the tail.
  const uint32_t tail = fgds_load_acquire(&ring->cq_tail.value);
  uint32_t n = std::min<uint32_t>(tail - head, max);
  n = std::min(n, ior->cq_entries);
  uint32_t i = 0;
  for (; i < n; ++i) {
    const fgds_cqe& cqe = ior->cqes[(head + i) & (ior->cq_entries - 1)];
    // A stager chunk's completion: the submitting thread created the
    // stager after this call looked (it is published before any chunk
    // entry). Leave it for the next call, which goes through the stager.
    if ((cqe.tag == fgds::usrbio::gpu::kStagerTag ||
         cqe.tag == fgds::usrbio::gpu::kDirectTag) &&
        fgds::usrbio::gpu::StagerOf(ior) != nullptr) {
      break;
    }
    cqes[i] = cqe;
    fgds::usrbio::RejectStrayBounce(&cqes[i]);
  }
  n = i;
  if (n == 0) return 0;
  // Release: our reads of the slots finish before the daemon may reuse them.
  fgds_store_release(&ring->cq_head.value, head + n);
  fgds::usrbio::AddInFlight(ior, -static_cast<int32_t>(n));
  // The daemon may be waiting for CQ room with submissions pending.
  if (fgds_load_relaxed(&ring->sq_tail.value) !=
      fgds_load_acquire(&ring->sq_head.value)) {
    ErrnoSaver saver;
    fgds::usrbio::KickIfSleeping(ior);
  }
  return static_cast<int>(n);
}

extern "C" int fgds_ior_wait(struct fgds_ior* ior, struct fgds_cqe* cqes,
                             unsigned max, unsigned min,
                             int64_t timeout_us) noexcept {
  ErrnoSaver saver;
  if (ior == nullptr || ior->ring == nullptr || min > max) return -EINVAL;
  if (auto* stager = fgds::usrbio::gpu::StagerOf(ior)) {
    return stager->Wait(cqes, max, min, timeout_us);
  }
  if (min > fgds::usrbio::InFlight(ior) -
                __atomic_load_n(&ior->sq_pending, __ATOMIC_RELAXED)) {
    return -EINVAL;
  }
  int got = fgds_ior_peek(ior, cqes, max);
  if (got < 0 || static_cast<unsigned>(got) >= min) return got;
  fgds_ring_header* ring = ior->ring;
  const uint64_t start = fgds::usrbio::NowNs();
  const uint64_t deadline =
      timeout_us < 0 ? UINT64_MAX
                     : start + static_cast<uint64_t>(timeout_us) * 1000;
  const uint64_t spin_end = start + uint64_t{ior->spin_us} * 1000;
  auto ready = [&] {
    return fgds_load_acquire(&ring->cq_tail.value) !=
           fgds_load_relaxed(&ring->cq_head.value);
  };
  while (static_cast<unsigned>(got) < min) {
    const uint64_t now = fgds::usrbio::NowNs();
    if (now >= deadline) break;
    if (now < spin_end) {
      if (!ready()) continue;
    } else {
      // The socket is watched with the eventfd: a daemon that died can
      // never write the eventfd, but its end of the socket closes.
      int ret = fgds::usrbio::SleepForCompletions(ior, deadline);
      if (ret == -ENOTCONN) {
        int last = fgds_ior_peek(ior, cqes + got, max - got);
        got += last > 0 ? last : 0;
        return static_cast<unsigned>(got) >= min ? got : -ENOTCONN;
      }
      if (ret < 0) return got > 0 ? got : ret;
    }
    int more = fgds_ior_peek(ior, cqes + got, max - got);
    if (more > 0) got += more;
  }
  return got;
}

extern "C" int fgds_ior_eventfd(struct fgds_ior* ior) noexcept {
  if (ior == nullptr || ior->ring == nullptr) return -EINVAL;
  // From now on the daemon signals every batch, whether or not a thread
  // sleeps in fgds_ior_wait.
  uint32_t* flags = &ior->ring->cq_head.flags;
  fgds_store_relaxed(flags,
                     fgds_load_relaxed(flags) | FGDS_RING_CQ_ALWAYS_NOTIFY);
  fgds_full_fence();
  return ior->complete_efd;
}
