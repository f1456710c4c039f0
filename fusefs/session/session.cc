#include "fusefs/session/session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "fusefs/session/gpu_iov.h"
#include "fusefs/session/mount_node.h"

namespace fgds::session {
namespace {

// Receives one packet and the descriptors that came with it. Returns the
// byte count, 0 at end of stream, -EPROTO for a truncated packet or
// descriptors, or -errno.
ssize_t ReceivePacket(int sock, void* buf, size_t size, int* fds, int* nfds) {
  iovec iov = {buf, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * FGDS_WIRE_MAX_FDS)];
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
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
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (int i = 0; i < *nfds; ++i) close(fds[i]);
    *nfds = 0;
    return -EPROTO;
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

}  // namespace

Session::Session(int sock, const SessionContext& context)
    : sock_(sock),
      context_(context),
      registry_(std::make_shared<Registry>(context.limits.registry)) {
  ucred cred = {};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    pid_ = cred.pid;
    uid_ = cred.uid;
    gid_ = cred.gid;
  }
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
  LogInfo("usrbio session opened: pid %d uid %u gid %u", pid_, uid_, gid_);
  for (;;) {
    unsigned char buf[FGDS_WIRE_MAX_MESSAGE];
    int fds[FGDS_WIRE_MAX_FDS];
    int nfds = 0;
    ssize_t n = ReceivePacket(sock_, buf, sizeof(buf), fds, &nfds);
    if (n == 0) {
      // End of stream, or an empty packet (on SOCK_SEQPACKET they read
      // the same): the session ends either way, and descriptors that came
      // with an empty packet are ours to close.
      for (int i = 0; i < nfds; ++i) close(fds[i]);
      break;
    }
    if (n < 0 && n != -EPROTO) break;  // gone or shut down
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
      break;
    }
    fgds_msg_reply reply = {};
    Handle(request, fds, &reply);
    Reply(FGDS_MSG_REPLY, request.header.seq, reply);
  }
  Teardown();
  {
    // Closed here, not when the server reaps this object: the client sees
    // the end at once and no descriptor outlives the session.
    fgds::MutexLock lock(&sock_mu_);
    close(sock_);
    sock_closed_ = true;
  }
  LogInfo("usrbio session closed: pid %d", pid_);
  done_.store(true, std::memory_order_release);
}

void Session::Handle(const Request& request, int* fds, fgds_msg_reply* reply) {
  uint32_t* id = &reply->id;
  int& result = reply->result;
  switch (request.header.type) {
    case FGDS_MSG_HELLO:
      hello_done_ = true;
      *id = FGDS_WIRE_VERSION;
      result = 0;
      return;
    case FGDS_MSG_IOV_REGISTER:
      result = RegisterIov(request.iov_register, fds[0], id);
      return;
    case FGDS_MSG_GPU_IOV_REGISTER:
      result = RegisterGpuIov(request.gpu_iov_register, fds[0], reply);
      return;
    case FGDS_MSG_IOR_REGISTER:
      result = RegisterIor(request.ior_register, fds, id);
      return;
    case FGDS_MSG_FD_REGISTER:
      result = RegisterFile(fds[0], id);
      return;
    case FGDS_MSG_IOV_UNREGISTER:
      result = registry_->RemoveIov(request.unregister.id);
      return;
    case FGDS_MSG_FD_UNREGISTER:
      result = registry_->RemoveFile(request.unregister.id);
      return;
    case FGDS_MSG_IOR_UNREGISTER:
      result = UnregisterIor(request.unregister.id);
      return;
  }
  result = -EPROTO;  // ParseRequest admits no other type
}

int Session::RegisterIov(const fgds_msg_iov_register& msg, int memfd,
                         uint32_t* id) {
  std::shared_ptr<SharedMemory> memory;
  int ret = msg.size > context_.limits.registry.max_iov_bytes
                ? -EINVAL
                : SharedMemory::Map(memfd, msg.size, &memory);
  // The mapping keeps the pages; the descriptor is not needed any more.
  close(memfd);
  if (ret != 0) return ret;
  int64_t added = registry_->AddIov(std::move(memory));
  if (added < 0) return static_cast<int>(added);
  *id = static_cast<uint32_t>(added);
  return 0;
}

int Session::RegisterGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                            fgds_msg_reply* reply) {
  // Closed on every path: a DIRECT registration holds its own reference to
  // the dma-buf (and so to the GPU memory) in the module.
  std::string exporter;
  int ret = CheckGpuIovValues(msg, context_.limits.registry.max_iov_bytes);
  if (ret == 0 && DmaBufExporter(dmabuf_fd, &exporter) != 0) {
    LogWarning("usrbio session of pid %d: GPU iov refused: not a dma-buf",
               pid_);
    ret = -EINVAL;
  }
  if (ret != 0) {
    close(dmabuf_fd);
    return ret;
  }
  GpuIovOptions options;
  options.device_dir = context_.device_dir;
  if (!context_.storage_dir.empty()) {
    options.storage_fd =
        open(context_.storage_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  GpuIovMapping mapping = MapGpuIov(msg, dmabuf_fd, options);
  if (options.storage_fd >= 0) close(options.storage_fd);
  close(dmabuf_fd);
  if (mapping.path == FGDS_PATH_DIRECT) {
    int64_t added = registry_->AddIov(std::move(mapping.memory));
    if (added < 0) return static_cast<int>(added);
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

int Session::RegisterIor(const fgds_msg_ior_register& msg, int* fds,
                         uint32_t* id) {
  fgds_ring_layout layout;
  std::shared_ptr<SharedMemory> memory;
  int ret = fgds_ring_get_layout(msg.entries, &layout);
  if (ret == 0 && rings_.size() >= context_.limits.max_rings) ret = -ENOSPC;
  if (ret == 0 && (msg.priority < -1 || msg.priority > 1)) ret = -EINVAL;
  if (ret == 0) ret = SharedMemory::Map(fds[0], layout.total_size, &memory);
  close(fds[0]);
  if (ret == 0) {
    // Only real eventfds: anything else (a pipe, a socket) could block us
    // in ways an eventfd cannot.
    for (int i = 1; i < 3 && ret == 0; ++i) {
      char target[64] = {};
      std::string link = "/proc/self/fd/" + std::to_string(fds[i]);
      if (readlink(link.c_str(), target, sizeof(target) - 1) < 0 ||
          strcmp(target, "anon_inode:[eventfd]") != 0) {
        ret = -EINVAL;
      }
    }
  }
  if (ret != 0) {
    close(fds[1]);
    close(fds[2]);
    return ret;
  }
  std::shared_ptr<Ring> ring;
  ret = Ring::Create(std::move(memory), fds[1], fds[2], msg, registry_,
                     context_.backend, context_.invalidator, context_.io_stats,
                     &ring);
  if (ret != 0) return ret;
  ring->Start();
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

int Session::RegisterFile(int fd, uint32_t* id) {
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
  backend::NodeId node = 0;
  if (ret >= 0) {
    ret = context_.node_of_fd ? context_.node_of_fd(fd, &node)
                              : MountNodeOf(fd, context_.mount_dev, &node);
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
      context_.backend->NodeOf(handle));
  int64_t added = registry_->AddFile(std::move(file));
  if (added < 0) return static_cast<int>(added);
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
}

}  // namespace fgds::session
