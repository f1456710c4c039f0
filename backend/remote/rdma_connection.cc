#include "backend/remote/rdma_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backend/remote/crc32c.h"
#include "backend/remote/frame_stream.h"
#include "common/errno_status.h"

namespace fgds::remote {
namespace {

// wr_id: the kind in the top byte, the slot below.
constexpr uint64_t kWrRecv = 1ull << 56;
constexpr uint64_t kWrSend = 2ull << 56;
constexpr uint64_t kWrRdma = 3ull << 56;
constexpr uint64_t kWrKindMask = 0xffull << 56;

// Outstanding RDMA READs each side allows the other (clamped to the
// device's limits).
constexpr int kRdmaReadDepth = 16;

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int WcError(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return ECONNRESET;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_MW_BIND_ERR:
      return EACCES;
    default:
      return EIO;
  }
}

std::string AddressString(const sockaddr* sa) {
  if (sa == nullptr) return "?";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  const socklen_t len =
      sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return sa->sa_family == AF_INET6 ? absl::StrCat("[", host, "]:", port)
                                   : absl::StrCat(host, ":", port);
}

// Waits for the next connection-manager event on `channel` (non-blocking
// fd) and checks it is `want`. On success *param (if given) gets the
// event's connection parameters.
absl::Status WaitCmEvent(rdma_event_channel* channel, rdma_cm_event_type want,
                         int64_t deadline_ms, const std::string& what) {
  for (;;) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) == 0) {
      const rdma_cm_event_type type = event->event;
      const int status = event->status;
      // A reject may say why (the agent puts its reason there).
      std::string why;
      if (type == RDMA_CM_EVENT_REJECTED &&
          event->param.conn.private_data != nullptr) {
        const auto* p =
            static_cast<const char*>(event->param.conn.private_data);
        for (size_t i = 0; i < event->param.conn.private_data_len; ++i) {
          if (p[i] == '\0') break;
          why.push_back(p[i] >= 0x20 && p[i] <= 0x7e ? p[i] : '?');
        }
      }
      rdma_ack_cm_event(event);
      if (type == want) return absl::OkStatus();
      if (!why.empty()) {
        return PosixError(absl::StrCat(what, ": refused: ", why), ECONNREFUSED);
      }
      int err = EPROTO;
      switch (type) {
        case RDMA_CM_EVENT_REJECTED:
        case RDMA_CM_EVENT_CONNECT_ERROR:
          err = ECONNREFUSED;
          break;
        case RDMA_CM_EVENT_UNREACHABLE:
          err = EHOSTUNREACH;
          break;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
          err = status < 0 ? -status : ENETUNREACH;
          break;
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
          err = ECONNRESET;
          break;
        default:
          break;
      }
      return PosixError(absl::StrCat(what, ": ", rdma_event_str(type),
                                     " (status ", status, ")"),
                        err);
    }
    if (errno != EAGAIN && errno != EINTR) {
      return PosixError(absl::StrCat(what, ": rdma_get_cm_event"), errno);
    }
    int timeout = -1;
    if (deadline_ms >= 0) {
      const int64_t left = deadline_ms - NowMs();
      if (left <= 0) {
        return PosixError(absl::StrCat(what, ": no answer in time"), ETIMEDOUT);
      }
      timeout = static_cast<int>(left);
    }
    pollfd p = {channel->fd, POLLIN, 0};
    if (poll(&p, 1, timeout) < 0 && errno != EINTR) {
      return PosixError(absl::StrCat(what, ": poll"), errno);
    }
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<RdmaProtectionDomain>>
RdmaProtectionDomain::Allocate(ibv_context* context) {
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) return PosixError("ibv_alloc_pd", errno ? errno : ENOMEM);
  return std::shared_ptr<RdmaProtectionDomain>(new RdmaProtectionDomain(pd));
}

RdmaProtectionDomain::~RdmaProtectionDomain() { ibv_dealloc_pd(pd_); }

absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>>
RdmaMemoryRegion::RegisterHost(std::shared_ptr<RdmaProtectionDomain> pd,
                               void* addr, size_t length, bool remote_access) {
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote_access) access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(pd->pd(), addr, length, access);
  if (mr == nullptr) {
    return PosixError(absl::StrCat("ibv_reg_mr of ", length, " bytes"),
                      errno ? errno : ENOMEM);
  }
  const uint64_t base = reinterpret_cast<uintptr_t>(addr);
  return std::unique_ptr<RdmaMemoryRegion>(
      new RdmaMemoryRegion(std::move(pd), mr, length, base, addr));
}

absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>>
RdmaMemoryRegion::RegisterDmabuf(std::shared_ptr<RdmaProtectionDomain> pd,
                                 int fd, uint64_t fd_offset, size_t length,
                                 uint64_t iova) {
  const int access =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  errno = 0;  // a provider without the verb may fail without setting it
  ibv_mr* mr = ibv_reg_dmabuf_mr(pd->pd(), fd_offset, length, iova, fd, access);
  if (mr == nullptr) {
    // EOPNOTSUPP: the device (or its kernel driver) takes no dma-buf
    // regions, as soft-RoCE does not.
    return PosixError(absl::StrCat("ibv_reg_dmabuf_mr of ", length,
                                   " bytes of dma-buf fd ", fd),
                      errno ? errno : EOPNOTSUPP);
  }
  return std::unique_ptr<RdmaMemoryRegion>(
      new RdmaMemoryRegion(std::move(pd), mr, length, iova, nullptr));
}

RdmaMemoryRegion::~RdmaMemoryRegion() { ibv_dereg_mr(mr_); }

absl::StatusOr<std::unique_ptr<RdmaConnection>> RdmaConnection::Connect(
    const HostPort& agent, std::shared_ptr<RdmaProtectionDomain> pd,
    uint32_t slots, int timeout_ms) {
  const std::string name =
      absl::StrCat("rdma agent ", agent.host, ":", agent.port);
  const int64_t deadline = DeadlineFrom(timeout_ms);
  std::unique_ptr<RdmaConnection> c(new RdmaConnection());
  c->peer_ = absl::StrCat(agent.host, ":", agent.port);
  c->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->wake_fd_ < 0) return PosixError("eventfd", errno);
  c->channel_ = rdma_create_event_channel();
  if (c->channel_ == nullptr) {
    // No /dev/infiniband/rdma_cm: no RDMA stack on this host.
    return PosixError(
        absl::StrCat(name,
                     ": cannot open the RDMA connection manager "
                     "(/dev/infiniband/rdma_cm; no RDMA device?)"),
        errno ? errno : ENODEV);
  }
  SetNonBlocking(c->channel_->fd);
  if (rdma_create_id(c->channel_, &c->id_, nullptr, RDMA_PS_TCP) != 0) {
    c->id_ = nullptr;
    return PosixError(absl::StrCat(name, ": rdma_create_id"), errno);
  }
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(agent.port);
  if (int rc = getaddrinfo(agent.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat(name, ": cannot resolve: ", gai_strerror(rc)));
  }
  const int resolve_ms = timeout_ms < 0 ? 5000 : std::max(timeout_ms, 1);
  int rc = rdma_resolve_addr(c->id_, nullptr, found->ai_addr, resolve_ms);
  const int resolve_err = errno;
  freeaddrinfo(found);
  if (rc != 0) {
    return PosixError(absl::StrCat(name, ": rdma_resolve_addr"), resolve_err);
  }
  if (absl::Status st = WaitCmEvent(c->channel_, RDMA_CM_EVENT_ADDR_RESOLVED,
                                    deadline, name + ": resolving the address");
      !st.ok()) {
    return st;
  }
  if (rdma_resolve_route(c->id_, resolve_ms) != 0) {
    return PosixError(absl::StrCat(name, ": rdma_resolve_route"), errno);
  }
  if (absl::Status st = WaitCmEvent(c->channel_, RDMA_CM_EVENT_ROUTE_RESOLVED,
                                    deadline, name + ": resolving the route");
      !st.ok()) {
    return st;
  }
  if (pd == nullptr) {
    auto allocated = RdmaProtectionDomain::Allocate(c->id_->verbs);
    if (!allocated.ok()) return allocated.status();
    pd = std::move(*allocated);
  } else if (pd->context() != c->id_->verbs) {
    return PosixError(
        absl::StrCat(name,
                     ": the route leads to another RDMA device than the "
                     "one the memory was registered with"),
        EXDEV);
  }
  c->pd_ = std::move(pd);
  if (absl::Status st = c->SetUp(slots); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat(name, ": ", st.message()));
  }
  ibv_device_attr attr = {};
  ibv_query_device(c->id_->verbs, &attr);
  rdma_conn_param param = {};
  // The agent RDMA-READs a write's data from our memory.
  param.responder_resources =
      static_cast<uint8_t>(std::clamp(attr.max_qp_rd_atom, 1, kRdmaReadDepth));
  param.initiator_depth = static_cast<uint8_t>(
      std::clamp(attr.max_qp_init_rd_atom, 1, kRdmaReadDepth));
  param.retry_count = 7;
  // A receiver out of posted receives is a peer bug, not a reason to
  // fail: wait (the deadlines above every wait bound it).
  param.rnr_retry_count = 7;
  if (rdma_connect(c->id_, &param) != 0) {
    return PosixError(absl::StrCat(name, ": rdma_connect"), errno);
  }
  if (absl::Status st = WaitCmEvent(c->channel_, RDMA_CM_EVENT_ESTABLISHED,
                                    deadline, name + ": connecting");
      !st.ok()) {
    return st;
  }
  return c;
}

absl::StatusOr<std::unique_ptr<RdmaConnection>> RdmaConnection::Accept(
    rdma_cm_id* id, const rdma_conn_param& request, uint32_t slots,
    int timeout_ms) {
  const int64_t deadline = DeadlineFrom(timeout_ms);
  std::unique_ptr<RdmaConnection> c(new RdmaConnection());
  c->id_ = id;
  c->peer_ = AddressString(rdma_get_peer_addr(id));
  c->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->wake_fd_ < 0) return PosixError("eventfd", errno);
  c->channel_ = rdma_create_event_channel();
  if (c->channel_ == nullptr) {
    return PosixError("rdma_create_event_channel", errno);
  }
  SetNonBlocking(c->channel_->fd);
  // From here on this connection's events (ESTABLISHED, DISCONNECTED) come
  // on its own channel, to the thread that serves it.
  if (rdma_migrate_id(id, c->channel_) != 0) {
    return PosixError("rdma_migrate_id", errno);
  }
  auto pd = RdmaProtectionDomain::Allocate(id->verbs);
  if (!pd.ok()) return pd.status();
  c->pd_ = std::move(*pd);
  if (absl::Status st = c->SetUp(slots); !st.ok()) return st;
  ibv_device_attr attr = {};
  ibv_query_device(id->verbs, &attr);
  rdma_conn_param param = {};
  param.responder_resources = static_cast<uint8_t>(std::min<int>(
      request.initiator_depth, std::clamp(attr.max_qp_rd_atom, 1, 255)));
  param.initiator_depth = static_cast<uint8_t>(
      std::min<int>(request.responder_resources,
                    std::clamp(attr.max_qp_init_rd_atom, 1, 255)));
  param.rnr_retry_count = 7;
  if (rdma_accept(id, &param) != 0) {
    return PosixError("rdma_accept", errno);
  }
  if (absl::Status st = WaitCmEvent(c->channel_, RDMA_CM_EVENT_ESTABLISHED,
                                    deadline, "accepting " + c->peer_);
      !st.ok()) {
    return st;
  }
  return c;
}

absl::Status RdmaConnection::SetUp(uint32_t slots) {
  slots_ = slots;
  comp_channel_ = ibv_create_comp_channel(id_->verbs);
  if (comp_channel_ == nullptr) {
    return PosixError("ibv_create_comp_channel", errno);
  }
  SetNonBlocking(comp_channel_->fd);
  // Sends (one per slot), RDMA operations (one at a time) and receives.
  const int cqe = static_cast<int>(2 * slots + 4);
  cq_ = ibv_create_cq(id_->verbs, cqe, nullptr, comp_channel_, 0);
  if (cq_ == nullptr) return PosixError("ibv_create_cq", errno);
  ibv_qp_init_attr qp = {};
  qp.send_cq = cq_;
  qp.recv_cq = cq_;
  qp.qp_type = IBV_QPT_RC;
  qp.sq_sig_all = 1;  // every completion frees a slot or ends a wait
  qp.cap.max_send_wr = slots + 2;
  qp.cap.max_recv_wr = slots;
  qp.cap.max_send_sge = 1;
  qp.cap.max_recv_sge = 1;
  if (rdma_create_qp(id_, pd_->pd(), &qp) != 0) {
    return PosixError("rdma_create_qp", errno);
  }
  qp_created_ = true;
  recv_buffer_.resize(size_t{slots} * kRdmaSlotBytes);
  send_buffer_.resize(size_t{slots} * kRdmaSlotBytes);
  auto recv_mr = RdmaMemoryRegion::RegisterHost(pd_, recv_buffer_.data(),
                                                recv_buffer_.size(), false);
  if (!recv_mr.ok()) return recv_mr.status();
  recv_mr_ = std::move(*recv_mr);
  auto send_mr = RdmaMemoryRegion::RegisterHost(pd_, send_buffer_.data(),
                                                send_buffer_.size(), false);
  if (!send_mr.ok()) return send_mr.status();
  send_mr_ = std::move(*send_mr);
  for (uint32_t i = 0; i < slots; ++i) {
    free_send_slots_.push_back(i);
    if (int rc = PostReceive(i); rc != 0) {
      return PosixError("ibv_post_recv", -rc);
    }
  }
  return absl::OkStatus();
}

RdmaConnection::~RdmaConnection() {
  if (qp_created_) {
    rdma_disconnect(id_);
    rdma_destroy_qp(id_);
  }
  recv_mr_.reset();
  send_mr_.reset();
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
  pd_.reset();
  if (id_ != nullptr) rdma_destroy_id(id_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void RdmaConnection::Shutdown() {
  shut_down_.store(true);
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

int RdmaConnection::Fail(int err, std::string what) {
  if (failed_ == 0) {
    failed_ = err;
    last_error_ = absl::StrCat(what, " (", strerror(err), ")");
  }
  return -failed_;
}

int RdmaConnection::PostReceive(uint32_t slot) {
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(recv_buffer_.data()) +
             size_t{slot} * kRdmaSlotBytes;
  sge.length = kRdmaSlotBytes;
  sge.lkey = recv_mr_->lkey();
  ibv_recv_wr wr = {};
  wr.wr_id = kWrRecv | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  int rc = ibv_post_recv(id_->qp, &wr, &bad);
  return rc == 0 ? 0 : -rc;
}

void RdmaConnection::Drain() {
  ibv_wc wc[16];
  for (;;) {
    const int n = ibv_poll_cq(cq_, 16, wc);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      const uint64_t kind = wc[i].wr_id & kWrKindMask;
      const uint32_t slot = static_cast<uint32_t>(wc[i].wr_id & ~kWrKindMask);
      if (wc[i].status != IBV_WC_SUCCESS) {
        Fail(WcError(wc[i].status),
             absl::StrCat(kind == kWrRecv   ? "receive"
                          : kind == kWrSend ? "send"
                                            : "RDMA transfer",
                          " failed: ", ibv_wc_status_str(wc[i].status)));
      }
      if (kind == kWrRecv) {
        if (wc[i].status == IBV_WC_SUCCESS) {
          received_.push_back({slot, wc[i].byte_len});
        }
      } else if (kind == kWrSend) {
        free_send_slots_.push_back(slot);
      } else {
        ++rdma_completed_;
      }
    }
  }
}

void RdmaConnection::TakeCmEvent() {
  rdma_cm_event* event = nullptr;
  while (rdma_get_cm_event(channel_, &event) == 0) {
    const rdma_cm_event_type type = event->event;
    rdma_ack_cm_event(event);
    if (type == RDMA_CM_EVENT_DISCONNECTED ||
        type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
        type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
      Fail(ECONNRESET, absl::StrCat(peer_, ": ", rdma_event_str(type)));
    }
  }
}

template <typename Ready>
int RdmaConnection::WaitUntil(Ready ready, int64_t deadline_ms) {
  for (;;) {
    Drain();
    if (ready()) return 0;
    if (failed_ != 0) return -failed_;
    if (shut_down_.load()) return Fail(ECONNRESET, "connection shut down");
    // Arm the notification, then look again: a completion that came
    // between the drain and the arming raises no event.
    ibv_req_notify_cq(cq_, 0);
    Drain();
    if (ready()) return 0;
    if (failed_ != 0) return -failed_;
    int timeout = -1;
    if (deadline_ms >= 0) {
      const int64_t left = deadline_ms - NowMs();
      if (left <= 0) {
        return Fail(ETIMEDOUT,
                    absl::StrCat(peer_, ": no completion within the deadline"));
      }
      timeout = static_cast<int>(left);
    }
    pollfd fds[3] = {{comp_channel_->fd, POLLIN, 0},
                     {channel_->fd, POLLIN, 0},
                     {wake_fd_, POLLIN, 0}};
    int n = poll(fds, 3, timeout);
    if (n < 0 && errno != EINTR) return Fail(errno, "poll");
    if (fds[0].revents != 0) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (ibv_get_cq_event(comp_channel_, &cq, &context) == 0) {
        ibv_ack_cq_events(cq, 1);
      }
    }
    if (fds[1].revents != 0) TakeCmEvent();
  }
}

int RdmaConnection::SendFrame(FrameType type, uint64_t request_id,
                              std::span<const uint8_t> payload,
                              int timeout_ms) {
  if (failed_ != 0) return -failed_;
  if (payload.size() > kRdmaSlotBytes - kFrameHeaderSize) return -EMSGSIZE;
  if (int rc = WaitUntil([&] { return !free_send_slots_.empty(); },
                         DeadlineFrom(timeout_ms));
      rc != 0) {
    return rc;
  }
  const uint32_t slot = free_send_slots_.back();
  free_send_slots_.pop_back();
  uint8_t* buf = send_buffer_.data() + size_t{slot} * kRdmaSlotBytes;
  FrameHeader header;
  header.type = type;
  header.request_id = request_id;
  header.payload_len = static_cast<uint32_t>(payload.size());
  if (checked_) {
    header.flags = kFrameChecked;
    header.payload_crc = Crc32c(0, payload.data(), payload.size());
  }
  EncodeHeader(header, buf);
  if (!payload.empty()) {
    std::memcpy(buf + kFrameHeaderSize, payload.data(), payload.size());
  }
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(buf);
  sge.length = static_cast<uint32_t>(kFrameHeaderSize + payload.size());
  sge.lkey = send_mr_->lkey();
  ibv_send_wr wr = {};
  wr.wr_id = kWrSend | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) {
    free_send_slots_.push_back(slot);
    return Fail(rc, "ibv_post_send");
  }
  return 0;
}

int RdmaConnection::ReceiveFrame(FrameHeader* header,
                                 std::vector<uint8_t>* payload,
                                 uint32_t max_payload, int timeout_ms) {
  if (int rc = WaitUntil([&] { return !received_.empty(); },
                         DeadlineFrom(timeout_ms));
      rc != 0) {
    return rc;
  }
  const Received got = received_.front();
  received_.pop_front();
  const uint8_t* buf = recv_buffer_.data() + size_t{got.slot} * kRdmaSlotBytes;
  // Decode before reposting: the slot's bytes are ours until then. A
  // malformed frame is refused but leaves the queue pair usable, so the
  // caller can still say why it disconnects.
  int rc = 0;
  if (got.bytes < kFrameHeaderSize) {
    rc = -EPROTO;
  } else {
    rc = DecodeHeader(buf, header);
  }
  if (rc == 0 && header->payload_len != got.bytes - kFrameHeaderSize) {
    rc = -EPROTO;
  }
  if (rc == 0 && header->payload_len > max_payload) rc = -EMSGSIZE;
  const bool has_crc = rc == 0 && (header->flags & kFrameChecked) != 0;
  if (rc == 0 && checked_ && !has_crc) rc = -EBADMSG;
  if (rc == 0 && has_crc &&
      Crc32c(0, buf + kFrameHeaderSize, header->payload_len) !=
          header->payload_crc) {
    rc = -EBADMSG;
  }
  if (rc == 0) {
    payload->assign(buf + kFrameHeaderSize,
                    buf + kFrameHeaderSize + header->payload_len);
  }
  if (int post = PostReceive(got.slot); post != 0) {
    return Fail(-post, "ibv_post_recv");
  }
  if (rc != 0) {
    last_error_ =
        absl::StrCat(peer_, ": malformed frame (", strerror(-rc), ")");
  }
  return rc;
}

int RdmaConnection::PostRdma(ibv_wr_opcode opcode,
                             const RdmaMemoryRegion& region, const void* local,
                             size_t length, uint64_t remote_addr, uint32_t rkey,
                             int timeout_ms) {
  if (failed_ != 0) return -failed_;
  if (length == 0) return 0;
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(local);
  sge.length = static_cast<uint32_t>(length);
  sge.lkey = region.lkey();
  ibv_send_wr wr = {};
  wr.wr_id = kWrRdma;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) {
    return Fail(rc, "ibv_post_send (RDMA)");
  }
  const uint64_t ticket = ++rdma_posted_;
  return WaitUntil([&] { return rdma_completed_ >= ticket; },
                   DeadlineFrom(timeout_ms));
}

int RdmaConnection::Write(const RdmaMemoryRegion& region, const void* local,
                          size_t length, uint64_t remote_addr, uint32_t rkey,
                          int timeout_ms) {
  return PostRdma(IBV_WR_RDMA_WRITE, region, local, length, remote_addr, rkey,
                  timeout_ms);
}

int RdmaConnection::Read(const RdmaMemoryRegion& region, void* local,
                         size_t length, uint64_t remote_addr, uint32_t rkey,
                         int timeout_ms) {
  return PostRdma(IBV_WR_RDMA_READ, region, local, length, remote_addr, rkey,
                  timeout_ms);
}

}  // namespace fgds::remote
