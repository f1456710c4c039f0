#include "fusefs/session/session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "common/limit_names.h"
#include "common/log.h"
#include "fgds/usrbio.h"
#include "fusefs/session/client_eventfd.h"
#include "fusefs/session/client_memory.h"
#include "fusefs/session/gpu_iov.h"
#include "fusefs/session/mount_node.h"

namespace fgds::session {
namespace {

// Receives one packet and the descriptors that came with it. Returns the
// byte count, 0 at end of stream, -EPROTO for a truncated packet or
// descriptors, or -errno.
// `*out_of_fds`: the descriptors sent could not all be installed (the
// daemon is out of them: the kernel then truncates the control data), and
// none is returned; the bytes are.
ssize_t ReceivePacket(int sock, void* buf, size_t size, int* fds, int* nfds,
                      bool wait, bool* out_of_fds) {
  iovec iov = {buf, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * FGDS_WIRE_MAX_FDS)];
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  *nfds = 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr;
       cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      if (*nfds < static_cast<int>(FGDS_WIRE_MAX_FDS)) {
        fds[(*nfds)++] = fd;
      } else {
        close(fd);
      }
    }
  }
  // Too long a packet or too many descriptors: never half-parse.
  *out_of_fds = false;
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (int i = 0; i < *nfds; ++i) close(fds[i]);
    // Room for every descriptor a message may carry, yet fewer came and
    // the rest were cut: the kernel could not install them here.
    *out_of_fds = !(mh.msg_flags & MSG_TRUNC) &&
                  *nfds < static_cast<int>(FGDS_WIRE_MAX_FDS);
    *nfds = 0;
    return *out_of_fds ? n : -EPROTO;
  }
  return n;
}

// Access mode of a client's descriptor as open(2) flags for our reopen.
int AccessMode(int fd, bool* readable, bool* writable) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_PATH)) return -EBADF;
  const int mode = fl & O_ACCMODE;
  *readable = mode == O_RDONLY || mode == O_RDWR;
  *writable = mode == O_WRONLY || mode == O_RDWR;
  if (!*readable && !*writable) return -EBADF;
  return mode;
}

constexpr uint64_t kPage = 4096;

// Bytes of address space a mapping of `size` bytes takes. REQUIRES: size
// is bounded (an iov's size limit), so this cannot overflow.
uint64_t PageRounded(uint64_t size) {
  return (size + kPage - 1) & ~(kPage - 1);
}

}  // namespace

Session::Session(int sock, const SessionContext& context)
    : sock_(sock),
      context_(context),
      registry_(std::make_shared<Registry>(context.limits.registry)) {
  ucred cred = {};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    // No identity, nobody to charge: refused (never happens on a connected
    // unix socket).
    refusal_ = -errno;
    return;
  }
  pid_ = cred.pid;
  uid_ = cred.uid;
  gid_ = cred.gid;
  // Charged here, at accept, not at HELLO: a connection that never says
  // hello must count too, or idle connections would take every slot.
  refusal_ = UserLimits::Take(context_.user_limits, uid_, {.sessions = 1},
                              &session_charge_, &refused_limit_);
  LogInfo("usrbio session opened: pid %d uid %u gid %u", pid_, uid_, gid_);
}

Session::~Session() {
  fgds::MutexLock lock(&sock_mu_);
  if (!sock_closed_) close(sock_);
}

void Session::Shutdown() {
  fgds::MutexLock lock(&sock_mu_);
  if (!sock_closed_) shutdown(sock_, SHUT_RDWR);
}

void Session::Run() {
  while (ServeOne(/*wait=*/true) == Step::kOpen) {
  }
  End();
}

Session::Step Session::ServeOne(bool wait) {
  // A refused session answers, drops what the client sent, and ends: it
  // serves no request.
  if (refusal_ != 0) {
    Refuse();
    return Step::kEnded;
  }
  unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
  int fds[FGDS_WIRE_MAX_FDS];
  int nfds = 0;
  bool out_of_fds = false;
  ssize_t n =
      ReceivePacket(sock_, buf, sizeof(buf), fds, &nfds, wait, &out_of_fds);
  if (n == 0) {
    // End of stream, or an empty packet (on SOCK_SEQPACKET they read the
    // same): the session ends either way, and descriptors that came with
    // an empty packet are ours to close.
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    return Step::kEnded;
  }
  if (n == -EAGAIN || n == -EWOULDBLOCK) return Step::kOpen;
  if (n > 0 && out_of_fds) {
    // Our shortage, not a malformed message: that request fails with
    // EMFILE, the session goes on.
    LogWarning(
        "usrbio session of pid %d: the daemon is out of file descriptors; "
        "failing a request with EMFILE",
        pid_);
    fgds_msg_header header = {};
    memcpy(&header, buf, std::min(sizeof(header), static_cast<size_t>(n)));
    fgds_msg_reply error = {};
    error.result = -EMFILE;
    Reply(FGDS_MSG_REPLY, header.seq, error);
    return Step::kOpen;
  }
  if (n < 0 && n != -EPROTO) return Step::kEnded;  // gone or shut down
  Request request;
  int err = n < 0 ? -EPROTO
                  : ParseRequest(buf, static_cast<size_t>(n), nfds, &request);
  if (err == 0 && !hello_done_ && request.header.type != FGDS_MSG_HELLO) {
    err = -EPROTO;
  }
  if (err != 0) {
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    LogWarning("usrbio session of pid %d: malformed message, closing", pid_);
    fgds_msg_reply error = {};
    error.result = err;
    Reply(FGDS_MSG_ERROR, 0, error);
    return Step::kEnded;
  }
  fgds_msg_reply reply = {};
  try {
    Handle(request, fds, &reply);
  } catch (const std::bad_alloc&) {
    // The request fails; the session and every other one go on.
    reply = {};
    reply.result = -ENOMEM;
  }
  Reply(FGDS_MSG_REPLY, request.header.seq, reply);
  return Step::kOpen;
}

void Session::End() {
  Teardown();
  {
    // Closed here, not when the server reaps this object: the client sees
    // the end at once and no descriptor outlives the session.
    fgds::MutexLock lock(&sock_mu_);
    if (!sock_closed_) close(sock_);
    sock_closed_ = true;
  }
  LogInfo("usrbio session closed: pid %d", pid_);
  done_.store(true, std::memory_order_release);
}

void Session::Handle(const Request& request, int* fds, fgds_msg_reply* reply) {
  uint32_t* id = &reply->id;
  int& result = reply->result;
  uint32_t refused = FGDS_LIMIT_NONE;
  // A shortage while registering fails that request only. The Register*
  // functions own their descriptors and charges with RAII, so nothing
  // leaks when they throw.
  try {
    switch (request.header.type) {
      case FGDS_MSG_HELLO:
        hello_done_ = true;
        *id = FGDS_WIRE_VERSION;
        reply->path = FGDS_FEATURE_IOV_GPU_STAGING;
        result = 0;
        break;
      case FGDS_MSG_IOV_GPU_STAGING:
        result = TagGpuStaging(request.iov_gpu_staging);
        break;
      case FGDS_MSG_IOV_REGISTER:
        result = RegisterIov(request.iov_register, fds[0], id, &refused);
        break;
      case FGDS_MSG_GPU_IOV_REGISTER:
        result =
            RegisterGpuIov(request.gpu_iov_register, fds[0], reply, &refused);
        break;
      case FGDS_MSG_IOR_REGISTER:
        result = RegisterIor(request.ior_register, fds, id, &refused);
        break;
      case FGDS_MSG_FD_REGISTER:
        result = RegisterFile(fds[0], id, &refused);
        break;
      case FGDS_MSG_IOV_UNREGISTER:
        result = registry_->RemoveIov(request.unregister.id);
        break;
      case FGDS_MSG_FD_UNREGISTER:
        result = registry_->RemoveFile(request.unregister.id);
        break;
      case FGDS_MSG_IOR_UNREGISTER:
        result = UnregisterIor(request.unregister.id);
        break;
      default:
        result = -EPROTO;  // ParseRequest admits no other type
    }
  } catch (const std::bad_alloc&) {
    result = -ENOMEM;
  } catch (const std::system_error& e) {
    // std::thread of a new ring: the daemon is out of threads.
    LogWarning("usrbio session of pid %d: %s", pid_, e.what());
    result = -EAGAIN;
  }
  if (result < 0) {
    reply->id = 0;
    reply->path = 0;
    reply->reason = refused;
    uint64_t suppressed = 0;
    if (refused != FGDS_LIMIT_NONE &&
        AdmitRefusalLine(context_.refusal_log, uid_, &suppressed)) {
      LogInfo("usrbio session of pid %d uid %u: refused (%s): %s%s", pid_, uid_,
              strerror(-result), LimitDescription(refused),
              SuppressedNote(suppressed).c_str());
    }
  }
}

void Session::Refuse() {
  uint64_t suppressed = 0;
  if (AdmitRefusalLine(context_.refusal_log, uid_, &suppressed)) {
    LogWarning("usrbio session of pid %d uid %u refused (%s): %s%s", pid_, uid_,
               strerror(-refusal_), LimitDescription(refused_limit_),
               SuppressedNote(suppressed).c_str());
  }
  fgds_msg_reply error = {};
  error.result = refusal_;
  error.reason = refused_limit_;
  Reply(FGDS_MSG_ERROR, 0, error);
  // No more input: the client's later sends fail at once (EPIPE; the
  // library then reads this error). What it sent before is read and
  // dropped here, since closing with unread data would make the kernel
  // reset the connection and discard our error before the client reads it.
  // Without the shutdown the drain below could block on an idle client.
  if (shutdown(sock_, SHUT_RD) != 0) return;
  for (;;) {
    unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
    int fds[FGDS_WIRE_MAX_FDS];
    int nfds = 0;
    bool out_of_fds = false;
    ssize_t n = ReceivePacket(sock_, buf, sizeof(buf), fds, &nfds,
                              /*wait=*/true, &out_of_fds);
    for (int i = 0; i < nfds; ++i) close(fds[i]);
    if (n == 0 || (n < 0 && n != -EPROTO)) break;
  }
}

int Session::RegisterIov(const fgds_msg_iov_register& msg, int memfd,
                         uint32_t* id, uint32_t* refused) {
  std::shared_ptr<SharedMemory> memory;
  Charge charge;
  int ret = 0;
  if (msg.size > context_.limits.registry.max_iov_bytes) {
    ret = -EINVAL;
    *refused = FGDS_LIMIT_IOV_SIZE;
  }
  // Charged before mapping: a refused registration never takes address
  // space or a mapping from the daemon.
  if (ret == 0) {
    ret = UserLimits::Take(context_.user_limits, uid_,
                           {.mappings = 1, .bytes = PageRounded(msg.size)},
                           &charge, refused);
  }
  if (ret == 0) ret = SharedMemory::Map(memfd, msg.size, &memory);
  if (ret == 0) {
    ret = SealAllocatedMemfd(memfd);
    if (ret == -EINVAL) *refused = FGDS_LIMIT_UNALLOCATED;
    if (ret != 0) memory.reset();
  }
  // The mapping keeps the pages; the descriptor is not needed any more.
  close(memfd);
  if (ret != 0) return ret;
  memory->AttachCharge(std::move(charge));
  int64_t added = registry_->AddIov(std::move(memory));
  if (added < 0) {
    *refused = FGDS_LIMIT_SESSION_IOVS;
    return static_cast<int>(added);
  }
  *id = static_cast<uint32_t>(added);
  return 0;
}

int Session::RegisterGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                            fgds_msg_reply* reply, uint32_t* refused) {
  // Closed on every path but one: a DIRECT registration holds its own
  // reference to the dma-buf (and so to the GPU memory) in the module, and
  // the iov keeps the descriptor only for a backend that registers it with
  // a NIC (KeepDmabuf).
  std::string exporter;
  int ret = CheckGpuIovValues(msg, context_.limits.registry.max_iov_bytes);
  if (ret == 0 && context_.nic_only_gpu_iovs) {
    return RegisterNicOnlyGpuIov(msg, dmabuf_fd, reply, refused);
  }
  if (ret == 0 && DmaBufExporter(dmabuf_fd, &exporter) != 0) {
    LogWarning("usrbio session of pid %d: GPU iov refused: not a dma-buf",
               pid_);
    ret = -EINVAL;
  }
  // A direct mapping takes daemon address space and a mapping: charged
  // before it is made, given back below if the iov bounces instead.
  Charge charge;
  if (ret == 0) {
    ret = UserLimits::Take(context_.user_limits, uid_,
                           {.mappings = 1, .bytes = PageRounded(msg.size)},
                           &charge, refused);
  }
  if (ret != 0) {
    close(dmabuf_fd);
    return ret;
  }
  GpuIovOptions options;
  options.device_dir = context_.device_dir;
  options.gpus = context_.gpus;
  // The node is used for the peer: an unknown peer is nobody in particular.
  if (kmod::SocketPeerUser(sock_, &options.user) != 0) options.user = {};
  if (!context_.storage_dir.empty()) {
    options.storage_fd =
        open(context_.storage_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  GpuIovMapping mapping = MapGpuIov(msg, dmabuf_fd, options);
  if (options.storage_fd >= 0) close(options.storage_fd);
  if (mapping.path == FGDS_PATH_DIRECT && context_.keep_dmabufs) {
    // The descriptor counts against the user's registered files (each of
    // those holds descriptors too). Without room the iov stays direct and
    // its requests take the backend's own path (no dma-buf for the NIC).
    Charge fd_charge;
    uint32_t fd_refused = 0;
    if (UserLimits::Take(context_.user_limits, uid_, {.files = 1}, &fd_charge,
                         &fd_refused) == 0) {
      mapping.memory->KeepDmabuf(dmabuf_fd, msg.dmabuf_offset,
                                 std::move(fd_charge));
      dmabuf_fd = -1;
    } else {
      LogWarning(
          "usrbio session of pid %d: GPU iov's dma-buf not kept for the NIC: "
          "the user's registered-file budget is spent",
          pid_);
    }
  }
  if (dmabuf_fd >= 0) close(dmabuf_fd);
  // Per-GPU counting (fgds stat): which GPU, and how its offer ended.
  const int gpu_slot = context_.io_stats != nullptr
                           ? context_.io_stats->GpuSlot(msg.pci_bus_id)
                           : -1;
  if (context_.io_stats != nullptr) {
    context_.io_stats->NoteGpuIov(gpu_slot, mapping.path, mapping.reason);
  }
  if (mapping.path == FGDS_PATH_DIRECT) {
    mapping.memory->SetGpuSlot(gpu_slot);
    mapping.memory->AttachCharge(std::move(charge));
    int64_t added = registry_->AddIov(std::move(mapping.memory));
    if (added < 0) {
      *refused = FGDS_LIMIT_SESSION_IOVS;
      return static_cast<int>(added);
    }
    reply->id = static_cast<uint32_t>(added);
    LogInfo(
        "usrbio session of pid %d: GPU iov %u, %u bytes of GPU %s (dma-buf "
        "of %s): direct",
        pid_, reply->id, msg.size, msg.pci_bus_id, exporter);
  } else {
    LogInfo(
        "usrbio session of pid %d: GPU iov, %u bytes of GPU %s (dma-buf of "
        "%s): bounce: %s",
        pid_, msg.size, msg.pci_bus_id, exporter, mapping.message);
  }
  reply->path = mapping.path;
  reply->reason = mapping.reason;
  return 0;
}

int Session::RegisterNicOnlyGpuIov(const fgds_msg_gpu_iov_register& msg,
                                   int dmabuf_fd, fgds_msg_reply* reply,
                                   uint32_t* refused) {
  // No mapping: the descriptor is all the daemon keeps, and only a NIC
  // ever uses it (ibv_reg_dmabuf_mr, whose dma_buf_get refuses anything
  // that is not a dma-buf: the iov's entries then come back "bounce").
  std::string exporter;
  if (NicOnlyDescriptor(dmabuf_fd, &exporter) != 0) {
    LogWarning(
        "usrbio session of pid %d: GPU iov refused: not a dma-buf (nor a "
        "memfd)",
        pid_);
    close(dmabuf_fd);
    return -EINVAL;
  }
  const int gpu_slot = context_.io_stats != nullptr
                           ? context_.io_stats->GpuSlot(msg.pci_bus_id)
                           : -1;
  auto bounce = [&](uint32_t reason, const std::string& why) {
    close(dmabuf_fd);
    if (context_.io_stats != nullptr) {
      context_.io_stats->NoteGpuIov(gpu_slot, FGDS_PATH_BOUNCE, reason);
    }
    LogInfo(
        "usrbio session of pid %d: GPU iov, %u bytes of GPU %s (dma-buf of "
        "%s): bounce: %s",
        pid_, msg.size, msg.pci_bus_id, exporter, why);
    reply->path = FGDS_PATH_BOUNCE;
    reply->reason = reason;
    return 0;
  };
  if (!context_.gpus.Allows(msg.pci_bus_id)) {
    return bounce(FGDS_IOV_GPU_REASON_EXCLUDED,
                  std::string("GPU ") + msg.pci_bus_id +
                      " is not in the daemon's GPU subset (--gpus " +
                      context_.gpus.spec + ")");
  }
  // The reservation takes address space, charged as a mapping would be;
  // the kept descriptor is one registered file (as KeepDmabuf's).
  Charge charge;
  int ret = UserLimits::Take(context_.user_limits, uid_,
                             {.mappings = 1, .bytes = PageRounded(msg.size)},
                             &charge, refused);
  if (ret != 0) {
    close(dmabuf_fd);
    return ret;
  }
  Charge fd_charge;
  uint32_t fd_refused = 0;
  if (UserLimits::Take(context_.user_limits, uid_, {.files = 1}, &fd_charge,
                       &fd_refused) != 0) {
    return bounce(FGDS_IOV_GPU_REASON_REFUSED,
                  std::string("the dma-buf cannot be kept for the NIC: ") +
                      LimitDescription(fd_refused));
  }
  std::shared_ptr<SharedMemory> memory;
  ret = SharedMemory::NicOnly(msg.size, &memory);
  if (ret != 0) {
    return bounce(FGDS_IOV_GPU_REASON_REFUSED,
                  std::string("no address space to name the iov: ") +
                      std::strerror(-ret));
  }
  memory->KeepDmabuf(dmabuf_fd, msg.dmabuf_offset, std::move(fd_charge));
  memory->AttachCharge(std::move(charge));
  memory->SetGpuSlot(gpu_slot);
  if (context_.io_stats != nullptr) {
    context_.io_stats->NoteGpuIov(gpu_slot, FGDS_PATH_DIRECT,
                                  FGDS_IOV_GPU_REASON_NONE);
  }
  // From here the memory owns the descriptor (closed when it goes).
  const int64_t added = registry_->AddIov(std::move(memory));
  if (added < 0) {
    *refused = FGDS_LIMIT_SESSION_IOVS;
    return static_cast<int>(added);
  }
  reply->id = static_cast<uint32_t>(added);
  reply->path = FGDS_PATH_DIRECT;
  // Not the mapped DIRECT (reason 0): the client must be ready for "bounce
  // this entry" answers, so it sends each entry through its stager.
  reply->reason = FGDS_IOV_GPU_DIRECT_NIC_ONLY;
  LogInfo(
      "usrbio session of pid %d: GPU iov %u, %u bytes of GPU %s (%s): direct "
      "by the NIC only (not mapped; entries no RDMA agent moves bounce)",
      pid_, reply->id, msg.size, msg.pci_bus_id, exporter);
  return 0;
}

int Session::TagGpuStaging(const fgds_msg_iov_gpu_staging& msg) {
  // wire_parse guarantees the NUL inside the field.
  if (gpu::NormalizePciBusId(msg.pci_bus_id).empty()) return -EINVAL;
  const int slot = context_.io_stats != nullptr
                       ? context_.io_stats->GpuSlot(msg.pci_bus_id)
                       : -1;
  fgds::ReaderMutexLock lock(&registry_->mu());
  const std::shared_ptr<SharedMemory>* iov = registry_->FindIov(msg.iov_id);
  if (iov == nullptr || (*iov)->direct_only()) return -EINVAL;
  (*iov)->SetGpuSlot(slot);
  return 0;
}

int Session::RegisterIor(const fgds_msg_ior_register& msg, int* fds,
                         uint32_t* id, uint32_t* refused) {
  fgds_ring_layout layout;
  std::shared_ptr<SharedMemory> memory;
  Charge charge;
  int ret = fgds_ring_get_layout(msg.entries, &layout);
  if (ret == 0 && rings_.size() >= context_.limits.max_rings) {
    ret = -ENOSPC;
    *refused = FGDS_LIMIT_SESSION_RINGS;
  }
  if (ret == 0 && (msg.priority < -1 || msg.priority > 1)) ret = -EINVAL;
  if (ret == 0) {
    ret = UserLimits::Take(context_.user_limits, uid_,
                           {.rings = 1,
                            .ring_entries = layout.sq_entries,
                            .mappings = 1,
                            .bytes = PageRounded(layout.total_size)},
                           &charge, refused);
  }
  if (ret == 0) ret = SharedMemory::Map(fds[0], layout.total_size, &memory);
  if (ret == 0 && context_.ring_pool == nullptr) ret = -ENOTSUP;
  // Only real eventfds, not in semaphore mode: anything else (a pipe, a
  // socket) could block us in ways an eventfd cannot (client_eventfd.h).
  for (int i = 1; i < 3 && ret == 0; ++i) ret = CheckClientEventfd(fds[i]);
  if (ret != 0) {
    close(fds[0]);
    close(fds[1]);
    close(fds[2]);
    return ret;
  }
  // The ring's memory carries the whole ring's charge: it is released when
  // the last I/O of the ring completes, after the ring itself is gone.
  memory->AttachCharge(std::move(charge));
  std::shared_ptr<Ring> ring;
  ret = Ring::Create(std::move(memory), fds[1], fds[2], msg, registry_,
                     context_.backend, context_.invalidator, context_.io_stats,
                     &ring);
  if (ret == 0) {
    // The daemon posts completions into this memory: the client pays for
    // its pages too (client_memory.h). Sealed last, once everything else
    // is accepted, so that a refused ring's memfd can be sent again.
    ret = SealAllocatedMemfd(fds[0]);
    if (ret == -EINVAL) *refused = FGDS_LIMIT_UNALLOCATED;
  }
  close(fds[0]);
  // A ring refused here was never started: dropping it closes its
  // eventfds and unmaps.
  if (ret != 0) return ret;
  ret = ring->Start(context_.ring_pool);
  if (ret != 0) return ret;
  *id = next_ring_++;
  rings_.emplace(*id, std::move(ring));
  return 0;
}

int Session::UnregisterIor(uint32_t id) {
  auto it = rings_.find(id);
  if (it == rings_.end()) return -ENOENT;
  it->second->Stop();
  rings_.erase(it);
  return 0;
}

int Session::RegisterFile(int fd, uint32_t* id, uint32_t* refused) {
  bool readable = false;
  bool writable = false;
  int ret = AccessMode(fd, &readable, &writable);
  const int mode = ret;
  struct stat st;
  // fstat of a file on our mount is answered by our own FUSE threads (or
  // the kernel's attribute cache); it moves no data through the mount.
  if (ret >= 0 && fstat(fd, &st) != 0) ret = -EBADF;
  if (ret >= 0 && st.st_dev != context_.mount_dev) ret = -EBADF;
  if (ret >= 0 && !S_ISREG(st.st_mode)) ret = -EINVAL;
  if (ret >= 0 && context_.while_holding_client_fd) {
    context_.while_holding_client_fd();
  }
  backend::NodeId node = 0;
  if (ret >= 0) {
    ret = context_.node_of_fd ? context_.node_of_fd(fd, &node)
                              : MountNodeOf(fd, context_.mount_dev, &node);
  }
  // Charged before the backend opens anything: a registered file holds
  // daemon descriptors, and one user must not take them all (EMFILE for
  // everyone else).
  Charge charge;
  if (ret >= 0) {
    ret = UserLimits::Take(context_.user_limits, uid_, {.files = 1}, &charge,
                           refused);
  }
  backend::File* handle = nullptr;
  // Open while the client's descriptor is still held: it keeps the
  // kernel's inode, so `node` cannot have been forgotten (and its id given
  // to another file) in between.
  if (ret >= 0) ret = context_.backend->OpenNode(node, mode, &handle);
  // Then close at once: a descriptor of our own mount held by the daemon
  // would keep the mount busy at unmount.
  close(fd);
  // ESTALE: the backing file is gone; for the client, a descriptor that
  // cannot be registered.
  if (ret < 0) return ret == -ESTALE ? -EBADF : ret;
  auto file = std::make_shared<RegisteredFile>(
      context_.backend, handle, readable, writable,
      context_.backend->NodeOf(handle), /*unprivileged_writer=*/uid_ != 0);
  file->charge = std::move(charge);
  int64_t added = registry_->AddFile(std::move(file));
  if (added < 0) {
    *refused = FGDS_LIMIT_SESSION_FILES;
    return static_cast<int>(added);
  }
  *id = static_cast<uint32_t>(added);
  return 0;
}

void Session::Reply(uint16_t type, uint32_t seq, const fgds_msg_reply& reply) {
  unsigned char msg[sizeof(fgds_msg_header) + sizeof(fgds_msg_reply)];
  fgds_msg_header header = {};
  header.magic = FGDS_WIRE_MAGIC;
  header.version = FGDS_WIRE_VERSION;
  header.type = type;
  header.length = sizeof(msg);
  header.seq = seq;
  memcpy(msg, &header, sizeof(header));
  memcpy(msg + sizeof(header), &reply, sizeof(reply));
  // MSG_NOSIGNAL: a client that is gone must not kill the daemon. A
  // blocking send is bounded: one small reply per request it sent.
  (void)!send(sock_, msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Session::Teardown() {
  for (auto& [ring_id, ring] : rings_) ring->Stop();
  rings_.clear();
  registry_->Clear();
  // The rings' and iovs' charges go with their memory (some only when
  // their last I/O completes); the session's own slot goes now.
  session_charge_.Release();
}

}  // namespace fgds::session
