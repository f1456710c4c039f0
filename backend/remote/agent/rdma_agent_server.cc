#include "backend/remote/agent/rdma_agent_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/remote/crc32c.h"
#include "backend/remote/rdma_connection.h"
#include "common/errno_status.h"
#include "common/log.h"

namespace fgds::remote {
namespace {

// A request over RDMA: the IoBody's fixed part and the path, no data.
constexpr uint32_t kMaxRequestPayload = 64 + kMaxPathBytes;
// Credits a daemon may be granted: the agent posts a receive per credit.
constexpr uint32_t kMaxCredits = 256;

void SendError(RdmaConnection& conn, uint64_t request_id, int err,
               const std::string& message) {
  std::vector<uint8_t> payload;
  EncodeError({err, message}, &payload);
  conn.SendFrame(FrameType::kError, request_id, payload, 1000);
}

// Rejects a connection request, telling why in the private data (the
// daemon's connection manager reports it with the REJECTED event).
void Reject(rdma_cm_id* id, const std::string& why) {
  rdma_reject(id, why.data(),
              static_cast<uint8_t>(std::min<size_t>(why.size(), 140)));
  rdma_destroy_id(id);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RdmaAgentServer>> RdmaAgentServer::Start(
    AgentServerOptions options, std::unique_ptr<AgentStore> store) {
  if (absl::Status st = CheckServerLimits(options, kMaxCredits); !st.ok()) {
    return st;
  }
  const std::string name = absl::StrCat(
      "agent: rdma listen on ", options.listen.host, ":", options.listen.port);
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) {
    return PosixError(
        absl::StrCat(name,
                     ": cannot open the RDMA connection manager "
                     "(/dev/infiniband/rdma_cm; no RDMA device, or the "
                     "rdma_ucm module not loaded?)"),
        errno ? errno : ENODEV);
  }
  rdma_cm_id* id = nullptr;
  auto fail = [&](const std::string& what, int err) {
    if (id != nullptr) rdma_destroy_id(id);
    rdma_destroy_event_channel(channel);
    return PosixError(absl::StrCat(name, ": ", what), err);
  };
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    id = nullptr;
    return fail("rdma_create_id", errno);
  }
  addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.listen.port);
  if (int rc = getaddrinfo(options.listen.host.c_str(), port.c_str(), &hints,
                           &found);
      rc != 0) {
    return fail(absl::StrCat("cannot resolve: ", gai_strerror(rc)), EINVAL);
  }
  int rc = rdma_bind_addr(id, found->ai_addr);
  int err = errno;
  freeaddrinfo(found);
  // EADDRNOTAVAIL: no RDMA device has that address.
  if (rc != 0) return fail("rdma_bind_addr (no RDMA device there?)", err);
  if (rdma_listen(id, 128) != 0) return fail("rdma_listen", errno);
  int flags = fcntl(channel->fd, F_GETFL);
  if (flags >= 0) fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return fail("eventfd", errno);
  std::unique_ptr<RdmaAgentServer> server(new RdmaAgentServer(
      std::move(options), std::move(store), channel, id, wake));
  try {
    server->accept_thread_ =
        std::thread([s = server.get()] { s->AcceptLoop(); });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("agent: cannot start its accept thread: ", e.what()));
  }
  return server;
}

RdmaAgentServer::RdmaAgentServer(AgentServerOptions options,
                                 std::unique_ptr<AgentStore> store,
                                 rdma_event_channel* channel,
                                 rdma_cm_id* listen_id, int wake_fd)
    : options_(std::move(options)),
      service_(options_, std::move(store)),
      channel_(channel),
      listen_id_(listen_id),
      wake_fd_(wake_fd) {
  address_ = absl::StrCat(options_.listen.host, ":",
                          ntohs(rdma_get_src_port(listen_id_)));
}

RdmaAgentServer::~RdmaAgentServer() {
  Stop();
  rdma_destroy_id(listen_id_);
  rdma_destroy_event_channel(channel_);
  close(wake_fd_);
}

void RdmaAgentServer::Stop() {
  if (!connections_.BeginStop()) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  connections_.JoinAll();
}

void RdmaAgentServer::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) return;
    rdma_cm_event* event = nullptr;
    while (rdma_get_cm_event(channel_, &event) == 0) {
      if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        rdma_cm_id* id = event->id;
        const rdma_conn_param request = event->param.conn;
        // The id's events must all be acknowledged before it moves to its
        // connection's channel (rdma_migrate_id waits for that).
        rdma_ack_cm_event(event);
        Admit(id, request);
      } else {
        rdma_ack_cm_event(event);
      }
    }
  }
}

void RdmaAgentServer::Admit(rdma_cm_id* id, const rdma_conn_param& request) {
  using Admission = ConnectionThreads<RdmaConnection>::Admission;
  switch (connections_.Start(
      options_.max_connections,
      [this, id, request](auto* slot) { Serve(slot, id, request); })) {
    case Admission::kStarted:
      return;
    case Admission::kStopping:
      Reject(id, "agent: stopping");
      return;
    case Admission::kFull:
      service_.CountRefusedConnection();
      Reject(id, absl::StrCat("agent: connection limit (",
                              options_.max_connections, ") reached"));
      return;
    case Admission::kNoThread:
      Reject(id, "agent: cannot start a thread for you");
      return;
  }
}

void RdmaAgentServer::Serve(ConnectionThreads<RdmaConnection>::Slot* slot,
                            rdma_cm_id* id, rdma_conn_param request) {
  service_.CountConnection();
  auto accepted = RdmaConnection::Accept(id, request, options_.credits + 1,
                                         options_.handshake_timeout_ms);
  if (!accepted.ok()) {
    LogWarning("agent: %s", std::string(accepted.status().message()).c_str());
    return;
  }
  RdmaConnection& conn = **accepted;
  connections_.Attach(slot, &conn);
  // The data travels in no frame: with checked payloads its CRC travels in
  // the request (writes) and the reply (reads), end to end, beyond what
  // the RoCE/InfiniBand packet CRCs cover on the wire.
  RdmaChannel channel(conn);
  const Handshaken handshaken =
      service_.Handshake(channel, /*can_check_payloads=*/true);
  if (handshaken.client_id != 0) ServeRequests(conn, handshaken);
  connections_.Detach(slot);
  // The connection is torn down here, before the slot is marked finished.
}

void RdmaAgentServer::ServeRequests(RdmaConnection& conn,
                                    const Handshaken& who) {
  const int timeout = options_.io_timeout_ms;
  // The one data buffer of this connection, registered for local access
  // only: the daemon never reaches the agent's memory.
  std::vector<uint8_t> buffer(options_.max_io);
  auto region = RdmaMemoryRegion::RegisterHost(conn.domain(), buffer.data(),
                                               buffer.size(), false);
  if (!region.ok()) {
    LogWarning("agent: %s: %s", conn.peer().c_str(),
               std::string(region.status().message()).c_str());
    SendError(conn, 0, ENOMEM, "agent: cannot register its buffer");
    return;
  }
  FrameHeader header;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> reply;
  for (;;) {
    // Idle daemons may stay as long as they like; Stop wakes this.
    int rc = conn.ReceiveFrame(&header, &payload, kMaxRequestPayload, -1);
    auto protocol_error = [&](int err, const std::string& what) {
      service_.CountProtocolError();
      LogWarning("agent: %s: %s (%s); disconnected", conn.peer().c_str(),
                 what.c_str(), strerror(err));
      SendError(conn, header.request_id, err, absl::StrCat("agent: ", what));
    };
    if (rc == -ECONNRESET) return;  // the daemon left, or Stop
    if (rc != 0) return protocol_error(-rc, "bad frame");
    if (header.type != FrameType::kRead && header.type != FrameType::kWrite &&
        header.type != FrameType::kSync) {
      return protocol_error(EPROTO, "unexpected frame type");
    }
    // Over RDMA no request carries data, so a write has the layout of a
    // read request.
    IoBody io;
    size_t data_offset = 0;
    if (int r = DecodeIo(header.type == FrameType::kSync ? FrameType::kSync
                                                         : FrameType::kRead,
                         payload, options_.max_io, &io, &data_offset);
        r != 0) {
      return protocol_error(-r, "malformed request");
    }
    if (io.length > 0 && io.remote_addr == 0) {
      return protocol_error(EPROTO, "request names no memory region");
    }
    int64_t result = 0;
    uint32_t data_crc = 0;
    if (header.type == FrameType::kSync) {
      result = service_.Sync(io);
    } else if (header.type == FrameType::kRead) {
      result = service_.Read(io, buffer.data());
      if (result > 0) {
        // A failure here (the daemon's key or range is wrong, or it is
        // gone) breaks the queue pair: nothing more can be said.
        if (int r =
                conn.Write(**region, buffer.data(), static_cast<size_t>(result),
                           io.remote_addr, io.rkey, timeout);
            r != 0) {
          LogWarning("agent: %s: RDMA WRITE: %s", conn.peer().c_str(),
                     conn.last_error().c_str());
          return;
        }
        if (who.checked) {
          data_crc = Crc32c(0, buffer.data(), static_cast<size_t>(result));
        }
      }
    } else {
      if (int r = conn.Read(**region, buffer.data(), io.length, io.remote_addr,
                            io.rkey, timeout);
          r != 0) {
        LogWarning("agent: %s: RDMA READ: %s", conn.peer().c_str(),
                   conn.last_error().c_str());
        return;
      }
      if (who.checked && Crc32c(0, buffer.data(), io.length) != io.data_crc) {
        // Nothing applied: the daemon sends it again on a new connection.
        service_.CountCrcError();
        return protocol_error(EBADMSG, "write data CRC mismatch");
      }
      result = service_.Write(who, io, buffer.data());
    }
    reply.clear();
    EncodeReply({result, data_crc}, &reply);
    if (conn.SendFrame(FrameType::kReply, header.request_id, reply, timeout) !=
        0) {
      return;
    }
  }
}

}  // namespace fgds::remote
