#include "backend/remote/agent/agent_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "backend/remote/frame_stream.h"
#include "common/errno_status.h"
#include "common/log.h"

namespace fgds::remote {
namespace {

// A kRead carries no data: its fixed part and the path.
constexpr uint32_t kMaxReadRequestPayload = 64 + kMaxPathBytes;

// Tells the peer why it is being disconnected (best effort: it may be
// gone, or not reading).
void SendError(FrameStream& stream, uint64_t request_id, int err,
               const std::string& message) {
  std::vector<uint8_t> payload;
  EncodeError({err, message}, &payload);
  struct iovec part = {payload.data(), payload.size()};
  stream.Send(FrameType::kError, request_id, {&part, 1}, 1000);
}

int SendReply(FrameStream& stream, uint64_t request_id, int64_t result,
              const void* data, size_t size, int timeout_ms) {
  std::vector<uint8_t> head;
  EncodeReply({result}, &head);
  struct iovec parts[2] = {{head.data(), head.size()},
                           {const_cast<void*>(data), size}};
  return stream.Send(FrameType::kReply, request_id, {parts, size > 0 ? 2u : 1u},
                     timeout_ms);
}

// Receives a whole small payload (the handshake, a read request).
int ReceiveSmall(FrameStream& stream, const FrameHeader& header,
                 std::vector<uint8_t>* out, int timeout_ms) {
  out->resize(header.payload_len);
  if (int rc = stream.ReceivePayload(out->data(), out->size(), timeout_ms);
      rc != 0) {
    return rc;
  }
  return stream.FinishPayload();
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentServer>> AgentServer::Start(
    AgentServerOptions options, std::unique_ptr<AgentStore> store) {
  // TCP takes any number of requests in flight (the socket holds them).
  if (absl::Status st =
          CheckServerLimits(options, std::numeric_limits<uint32_t>::max());
      !st.ok()) {
    return st;
  }
  auto listen_fd = ListenTcp(options.listen, 128);
  if (!listen_fd.ok()) return listen_fd.status();
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    int err = errno;
    close(*listen_fd);
    return PosixError("agent: eventfd", err);
  }
  std::unique_ptr<AgentServer> server(
      new AgentServer(std::move(options), std::move(store), *listen_fd, wake));
  try {
    server->accept_thread_ =
        std::thread([s = server.get()] { s->AcceptLoop(); });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("agent: cannot start its accept thread: ", e.what()));
  }
  return server;
}

AgentServer::AgentServer(AgentServerOptions options,
                         std::unique_ptr<AgentStore> store, int listen_fd,
                         int wake_fd)
    : options_(std::move(options)),
      service_(options_, std::move(store)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      address_(LocalAddressOf(listen_fd)) {}

AgentServer::~AgentServer() {
  Stop();
  close(listen_fd_);
  close(wake_fd_);
}

void AgentServer::Stop() {
  if (!connections_.BeginStop()) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (accept_thread_.joinable()) accept_thread_.join();
  connections_.JoinAll();
}

void AgentServer::AcceptLoop() {
  for (;;) {
    struct pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (fds[1].revents != 0) return;
    if (n < 0) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        // Out of resources: wait instead of spinning on the pending
        // connection; Stop still wakes us.
        LogWarning("agent: accept: %s; retrying in 100 ms", strerror(errno));
        struct pollfd w = {wake_fd_, POLLIN, 0};
        if (poll(&w, 1, 100) > 0) return;
      }
      continue;
    }
    Admit(fd);
  }
}

void AgentServer::Admit(int fd) {
  using Admission = ConnectionThreads<FrameStream>::Admission;
  switch (connections_.Start(options_.max_connections,
                             [this, fd](auto* slot) { Serve(slot, fd); })) {
    case Admission::kStarted:
      return;
    case Admission::kStopping:
      close(fd);
      return;
    case Admission::kFull: {
      service_.CountRefusedConnection();
      FrameStream refused(fd);
      SendError(refused, 0, EAGAIN,
                absl::StrCat("agent: connection limit (",
                             options_.max_connections, ") reached"));
      return;
    }
    case Admission::kNoThread: {
      FrameStream refused(fd);
      SendError(refused, 0, EAGAIN, "agent: cannot start a thread for you");
      return;
    }
  }
}

void AgentServer::Serve(ConnectionThreads<FrameStream>::Slot* slot, int fd) {
  const std::string peer = PeerAddressOf(fd);
  FrameStream stream(fd);
  connections_.Attach(slot, &stream);
  service_.CountConnection();
  StreamChannel channel(stream, peer);
  const Handshaken handshaken =
      service_.Handshake(channel, /*can_check_payloads=*/true);
  if (handshaken.client_id != 0) {
    stream.set_checked(handshaken.checked);
    std::vector<uint8_t> buffer;
    while (ServeRequest(stream, handshaken, buffer, peer)) {
    }
  }
  connections_.Detach(slot);
}

bool AgentServer::ServeRequest(FrameStream& stream, const Handshaken& who,
                               std::vector<uint8_t>& buffer,
                               const std::string& peer) {
  const int timeout = options_.io_timeout_ms;
  FrameHeader header;
  // Between requests a daemon may stay idle for as long as it likes (its
  // connection counts against max_connections); Stop wakes this.
  int rc = stream.ReceiveHeader(&header, kMaxPayloadBytes, -1);
  if (rc == -ECONNRESET) return false;  // the daemon closed, or Stop
  auto protocol_error = [&](int err, const std::string& what) {
    service_.CountProtocolError();
    LogWarning("agent: %s: %s (%s); disconnected", peer.c_str(), what.c_str(),
               strerror(err));
    SendError(stream, header.request_id, err, absl::StrCat("agent: ", what));
    return false;
  };
  if (rc != 0) return protocol_error(-rc, "bad frame header");
  if (header.type == FrameType::kRead || header.type == FrameType::kSync) {
    if (header.payload_len > kMaxReadRequestPayload) {
      return protocol_error(EMSGSIZE, "request too long");
    }
    std::vector<uint8_t> request;
    if (int r = ReceiveSmall(stream, header, &request, timeout); r != 0) {
      if (r != -EBADMSG) return false;
      service_.CountCrcError();
      return protocol_error(EBADMSG, "request CRC mismatch");
    }
    IoBody io;
    size_t data_offset = 0;
    if (int r =
            DecodeIo(header.type, request, options_.max_io, &io, &data_offset);
        r != 0) {
      return protocol_error(-r, "malformed request");
    }
    if (header.type == FrameType::kSync) {
      return SendReply(stream, header.request_id, service_.Sync(io), nullptr, 0,
                       timeout) == 0;
    }
    if (buffer.size() < io.length) buffer.resize(options_.max_io);
    const int64_t result = service_.Read(io, buffer.data());
    return SendReply(stream, header.request_id, result, buffer.data(),
                     result > 0 ? static_cast<size_t>(result) : 0,
                     timeout) == 0;
  }
  if (header.type == FrameType::kWrite) {
    // The whole payload (fixed part, path, data) lands in the buffer; the
    // data is written from there, so it is copied once.
    if (header.payload_len > 64 + kMaxPathBytes + options_.max_io) {
      return protocol_error(EMSGSIZE, "write request too long");
    }
    if (buffer.size() < header.payload_len) {
      buffer.resize(64 + kMaxPathBytes + options_.max_io);
    }
    if (int r =
            stream.ReceivePayload(buffer.data(), header.payload_len, timeout);
        r != 0) {
      return false;
    }
    if (stream.FinishPayload() != 0) {
      // Nothing was applied: the daemon resends it on a new connection.
      service_.CountCrcError();
      return protocol_error(EBADMSG, "write data CRC mismatch");
    }
    IoBody io;
    size_t data_offset = 0;
    if (int r = DecodeIo(
            header.type,
            std::span<const uint8_t>(buffer.data(), header.payload_len),
            options_.max_io, &io, &data_offset);
        r != 0) {
      return protocol_error(-r, "malformed write request");
    }
    const int64_t result = service_.Write(who, io, buffer.data() + data_offset);
    return SendReply(stream, header.request_id, result, nullptr, 0, timeout) ==
           0;
  }
  return protocol_error(EPROTO, "unexpected frame type");
}

}  // namespace fgds::remote
