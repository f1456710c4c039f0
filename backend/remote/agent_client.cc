#include "backend/remote/agent_client.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_auth.h"
#include "backend/remote/agent_handshake.h"
#include "backend/remote/frame_stream.h"

namespace fgds::remote {
namespace {

// Connection failures worth one retry on a new connection. A file error
// (the reply's result) is not one; nor is a wrong key.
bool ConnectionFailed(int err) {
  return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT ||
         err == EPROTO || err == EBADMSG || err == ENOTCONN ||
         err == ECONNABORTED;
}

std::string AgentName(const HostPort& agent) {
  return absl::StrCat("agent ", agent.host, ":", agent.port);
}

}  // namespace

AgentClient::AgentClient(AgentClientOptions options)
    : options_(std::move(options)) {}

AgentClient::~AgentClient() = default;

absl::StatusOr<std::unique_ptr<AgentClient>> AgentClient::Connect(
    AgentClientOptions options) {
  if (options.client_id == 0) {
    Nonce random;
    if (absl::Status st = MakeNonce(&random); !st.ok()) return st;
    std::memcpy(&options.client_id, random.data(), sizeof(options.client_id));
    if (options.client_id == 0) options.client_id = 1;
  }
  std::unique_ptr<AgentClient> client(new AgentClient(std::move(options)));
  if (int rc = client->Reconnect(); rc != 0) {
    return absl::Status(rc == -EACCES ? absl::StatusCode::kPermissionDenied
                                      : absl::StatusCode::kUnavailable,
                        client->last_error());
  }
  return client;
}

int AgentClient::Fail(int err, std::string message) {
  if (err == EBADMSG) ++crc_errors_;
  last_error_ = absl::StrCat(AgentName(options_.agent), ": ", message, " (",
                             strerror(err), ")");
  stream_.reset();
  return -err;
}

int AgentClient::Reconnect() {
  stream_.reset();
  ++connects_;
  int fd = ConnectTcp(options_.agent, options_.connect_timeout_ms);
  if (fd < 0) return Fail(-fd, "cannot connect");
  stream_ = std::make_unique<FrameStream>(fd);
  const int timeout = options_.connect_timeout_ms;

  StreamChannel channel(*stream_, AgentName(options_.agent));
  ChallengeBody challenge;
  std::string why;
  const uint32_t want = (options_.checked ? kHelloWantChecked : 0) |
                        (options_.deferred_sync ? kHelloDeferSync : 0);
  if (int rc = RunDaemonHandshake(channel, options_.key, options_.client_id,
                                  want, timeout, &challenge, &why);
      rc != 0) {
    return Fail(-rc, why);
  }
  max_io_ = challenge.max_io;
  checked_ = options_.checked;
  deferred_sync_ = (challenge.flags & kHelloDeferSync) != 0;
  instance_ = challenge.instance;
  stream_->set_checked(checked_);
  last_error_.clear();
  return 0;
}

int64_t AgentClient::RequestOnce(FrameType type, const IoBody& io,
                                 void* buffer) {
  const int timeout = options_.io_timeout_ms;
  const uint64_t request_id = next_request_id_++;
  std::vector<uint8_t> head;
  EncodeIo(io, &head);
  struct iovec parts[2] = {{head.data(), head.size()}, {buffer, io.length}};
  const bool with_data = type == FrameType::kWrite && io.length > 0;
  if (int rc = stream_->Send(type, request_id, {parts, with_data ? 2u : 1u},
                             timeout);
      rc != 0) {
    return Fail(-rc, "sending a request");
  }
  FrameHeader header;
  const uint32_t max_reply =
      16 + (type == FrameType::kRead ? io.length : 0) + kMaxErrorMessageBytes;
  if (int rc = stream_->ReceiveHeader(&header, max_reply, timeout); rc != 0) {
    return Fail(-rc, "waiting for a reply");
  }
  if (header.type == FrameType::kError) {
    std::vector<uint8_t> payload(header.payload_len);
    int rc = stream_->ReceivePayload(payload.data(), payload.size(), timeout);
    if (rc == 0) rc = stream_->FinishPayload();
    ErrorBody error;
    if (rc != 0 || DecodeError(payload, &error) != 0) {
      return Fail(EPROTO, "bad error frame");
    }
    // The agent ends the connection after an error frame.
    return Fail(error.error, error.message);
  }
  if (header.type != FrameType::kReply || header.request_id != request_id ||
      header.payload_len < 16) {
    return Fail(EPROTO, "unexpected reply");
  }
  uint8_t fixed[16];
  if (int rc = stream_->ReceivePayload(fixed, sizeof(fixed), timeout);
      rc != 0) {
    return Fail(-rc, "reading a reply");
  }
  ReplyBody reply;
  size_t data_offset = 0;
  if (DecodeReply({fixed, sizeof(fixed)}, &reply, &data_offset) != 0) {
    return Fail(EPROTO, "malformed reply");
  }
  const size_t data = header.payload_len - sizeof(fixed);
  const bool read_ok = type == FrameType::kRead && reply.result >= 0 &&
                       static_cast<uint64_t>(reply.result) == data &&
                       data <= io.length;
  if (data != 0 && !read_ok) return Fail(EPROTO, "reply length mismatch");
  if (type == FrameType::kRead && reply.result >= 0 && !read_ok) {
    return Fail(EPROTO, "reply length mismatch");
  }
  if (type == FrameType::kWrite && reply.result > io.length) {
    return Fail(EPROTO, "the agent wrote more than was sent");
  }
  if (type == FrameType::kSync && reply.result > 0) {
    return Fail(EPROTO, "a sync's reply is not 0 or an errno");
  }
  // Read data lands in the caller's buffer directly.
  if (data > 0) {
    if (int rc = stream_->ReceivePayload(buffer, data, timeout); rc != 0) {
      return Fail(-rc, "reading data");
    }
  }
  if (int rc = stream_->FinishPayload(); rc != 0) {
    return Fail(-rc, "reply CRC mismatch");
  }
  return reply.result;
}

int64_t AgentClient::Request(FrameType type, std::string_view path,
                             uint64_t offset, void* buffer, size_t length) {
  IoBody io;
  io.seq = type == FrameType::kWrite ? next_seq_++ : 0;
  io.offset = offset;
  io.length = static_cast<uint32_t>(length);
  io.path = std::string(path);
  for (int attempt = 0;; ++attempt) {
    if (stream_ == nullptr) {
      if (int rc = Reconnect(); rc != 0) return rc;
    }
    const int64_t result = RequestOnce(type, io, buffer);
    // A negative result with the stream still there is the file's error.
    if (result >= 0 || stream_ != nullptr) return result;
    if (attempt > 0 || !ConnectionFailed(static_cast<int>(-result))) {
      return result;
    }
    ++retries_;
  }
}

int AgentClient::Sync(std::string_view path) {
  if (int rc = CheckRelativePath(path); rc != 0) {
    last_error_ = absl::StrCat("path '", std::string(path),
                               "' cannot name a file under the agent's root");
    return rc;
  }
  return static_cast<int>(Request(FrameType::kSync, path, 0, nullptr, 0));
}

int64_t AgentClient::Read(std::string_view path, uint64_t offset, void* out,
                          size_t length) {
  return Transfer(FrameType::kRead, path, offset, static_cast<uint8_t*>(out),
                  length);
}

int64_t AgentClient::Write(std::string_view path, uint64_t offset,
                           const void* data, size_t length) {
  // The agent only reads a write's buffer (RequestOnce sends it).
  return Transfer(FrameType::kWrite, path, offset,
                  const_cast<uint8_t*>(static_cast<const uint8_t*>(data)),
                  length);
}

int64_t AgentClient::Transfer(FrameType type, std::string_view path,
                              uint64_t offset, uint8_t* buffer, size_t length) {
  if (int rc = CheckRelativePath(path); rc != 0) {
    last_error_ = absl::StrCat("path '", std::string(path),
                               "' cannot name a file under the agent's root");
    return rc;
  }
  size_t done = 0;
  while (done < length) {
    const size_t piece = std::min<size_t>(length - done, max_io_);
    const int64_t n = Request(type, path, offset + done, buffer + done, piece);
    if (n < 0) return done > 0 ? static_cast<int64_t>(done) : n;
    done += static_cast<size_t>(n);
    // Short: end of file for a read, a full disk for a write.
    if (static_cast<size_t>(n) < piece) break;
  }
  return static_cast<int64_t>(done);
}

}  // namespace fgds::remote
