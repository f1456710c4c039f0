#include "backend/remote/rdma_agent_client.h"

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_auth.h"
#include "backend/remote/crc32c.h"
#include "common/errno_status.h"

namespace fgds::remote {
namespace {

// Connection failures worth redoing a transfer on a new connection (as
// the TCP client's): not a file's error, nor a wrong key, nor a region the
// agent could not reach (EACCES, the caller's mistake).
bool ConnectionFailed(int64_t err) {
  return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT ||
         err == EPROTO || err == EBADMSG || err == ENOTCONN ||
         err == ECONNABORTED;
}

// Receive slots the daemon posts: replies to at most kClientSlots - 1
// requests in flight, and an error frame.
constexpr uint32_t kClientSlots = 33;
constexpr uint32_t kMaxReplyPayload = 16 + kMaxErrorMessageBytes + 8;
// dma-buf regions are addressed by the agent from here on (any non-zero
// base works: the region's own range is all the NIC checks).
constexpr uint64_t kDmabufIovaBase = 1ull << 40;

}  // namespace

RdmaAgentClient::RdmaAgentClient(RdmaAgentClientOptions options)
    : options_(std::move(options)), pd_(options_.pd) {}

RdmaAgentClient::~RdmaAgentClient() = default;

absl::StatusOr<std::unique_ptr<RdmaAgentClient>> RdmaAgentClient::Connect(
    RdmaAgentClientOptions options) {
  if (options.client_id == 0) {
    Nonce random;
    if (absl::Status st = MakeNonce(&random); !st.ok()) return st;
    std::memcpy(&options.client_id, random.data(), sizeof(options.client_id));
    if (options.client_id == 0) options.client_id = 1;
  }
  std::unique_ptr<RdmaAgentClient> client(
      new RdmaAgentClient(std::move(options)));
  if (int rc = client->Reconnect(); rc != 0) {
    return PosixError(client->last_error(), -rc);
  }
  return client;
}

int RdmaAgentClient::Fail(int err, std::string message) {
  if (err == EBADMSG) ++crc_errors_;
  last_error_ =
      absl::StrCat("rdma agent ", options_.agent.host, ":", options_.agent.port,
                   ": ", message, " (", strerror(err), ")");
  conn_.reset();
  return -err;
}

absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>> RdmaAgentClient::RegisterHost(
    void* addr, size_t length) {
  return RdmaMemoryRegion::RegisterHost(pd_, addr, length, true);
}

absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>>
RdmaAgentClient::RegisterDmabuf(int fd, uint64_t fd_offset, size_t length) {
  return RdmaMemoryRegion::RegisterDmabuf(pd_, fd, fd_offset, length,
                                          kDmabufIovaBase + fd_offset);
}

int RdmaAgentClient::Reconnect() {
  conn_.reset();
  ++connects_;
  const int timeout = options_.connect_timeout_ms;
  auto conn = RdmaConnection::Connect(options_.agent, pd_, kClientSlots,
                                      options_.connect_timeout_ms);
  if (!conn.ok()) {
    last_error_ = std::string(conn.status().message());
    return -StatusToErrno(conn.status());
  }
  conn_ = std::move(*conn);
  pd_ = conn_->domain();

  RdmaChannel channel(*conn_);
  ChallengeBody challenge;
  std::string why;
  const uint32_t want = (options_.checked ? kHelloWantChecked : 0) |
                        (options_.deferred_sync ? kHelloDeferSync : 0);
  if (int rc = RunDaemonHandshake(channel, options_.key, options_.client_id,
                                  want, timeout, &challenge, &why);
      rc != 0) {
    return Fail(-rc, why);
  }
  checked_ = options_.checked;
  deferred_sync_ = (challenge.flags & kHelloDeferSync) != 0;
  instance_ = challenge.instance;
  max_io_ = challenge.max_io;
  credits_ = std::min(challenge.credits, kClientSlots - 1);
  last_error_.clear();
  return 0;
}

int64_t RdmaAgentClient::ReceiveReply(uint64_t request_id, uint32_t length,
                                      uint32_t* data_crc) {
  FrameHeader header;
  std::vector<uint8_t> payload;
  if (int rc = conn_->ReceiveFrame(&header, &payload, kMaxReplyPayload,
                                   options_.io_timeout_ms);
      rc != 0) {
    return Fail(-rc, "waiting for a reply: " + conn_->last_error());
  }
  if (header.type == FrameType::kError) {
    ErrorBody error;
    if (DecodeError(payload, &error) != 0) {
      return Fail(EPROTO, "bad error frame");
    }
    return Fail(error.error, error.message);  // the agent disconnects
  }
  ReplyBody reply;
  size_t data_offset = 0;
  if (header.type != FrameType::kReply || header.request_id != request_id ||
      DecodeReply(payload, &reply, &data_offset) != 0 ||
      data_offset != payload.size()) {
    return Fail(EPROTO, "unexpected reply");
  }
  if (reply.result > static_cast<int64_t>(length)) {
    return Fail(EPROTO, "the agent moved more than was asked");
  }
  *data_crc = reply.data_crc;
  return reply.result;
}

int64_t RdmaAgentClient::Read(std::string_view path, uint64_t offset,
                              const RdmaMemoryRegion& region,
                              size_t region_offset, size_t length) {
  return Transfer(FrameType::kRead, path, offset, region, region_offset,
                  length);
}

int64_t RdmaAgentClient::Write(std::string_view path, uint64_t offset,
                               const RdmaMemoryRegion& region,
                               size_t region_offset, size_t length) {
  return Transfer(FrameType::kWrite, path, offset, region, region_offset,
                  length);
}

int RdmaAgentClient::Sync(std::string_view path) {
  if (int rc = CheckRelativePath(path); rc != 0) {
    last_error_ = absl::StrCat("path '", std::string(path),
                               "' cannot name a file under the agent's root");
    return rc;
  }
  for (int attempt = 0;; ++attempt) {
    if (conn_ == nullptr) {
      if (int rc = Reconnect(); rc != 0) return rc;
    }
    const int rc = SyncOnce(path);
    if (conn_ != nullptr || attempt > 0 || !ConnectionFailed(-rc)) return rc;
    ++retries_;
  }
}

int RdmaAgentClient::SyncOnce(std::string_view path) {
  IoBody io;
  io.path = std::string(path);
  std::vector<uint8_t> payload;
  EncodeIo(io, &payload);
  const uint64_t request_id = next_request_id_++;
  if (int rc = conn_->SendFrame(FrameType::kSync, request_id, payload,
                                options_.io_timeout_ms);
      rc != 0) {
    return Fail(-rc, "sending a sync: " + conn_->last_error());
  }
  uint32_t unused_crc = 0;
  const int64_t n = ReceiveReply(request_id, 0, &unused_crc);
  return static_cast<int>(n);
}

int64_t RdmaAgentClient::Transfer(FrameType type, std::string_view path,
                                  uint64_t offset,
                                  const RdmaMemoryRegion& region,
                                  size_t region_offset, size_t length) {
  if (int rc = CheckRelativePath(path); rc != 0) {
    last_error_ = absl::StrCat("path '", std::string(path),
                               "' cannot name a file under the agent's root");
    return rc;
  }
  if (region_offset > region.length() ||
      length > region.length() - region_offset) {
    last_error_ = "the transfer does not fit in the registered region";
    return -EINVAL;
  }
  if (pd_ != nullptr && &region.domain() != pd_.get()) {
    last_error_ = "the region was registered with another client";
    return -EINVAL;
  }
  if (options_.checked && region.local_addr() == nullptr) {
    last_error_ =
        "checked payloads need host memory: the CPU cannot sum a dma-buf";
    return -EINVAL;
  }
  if (conn_ == nullptr) {
    if (int rc = Reconnect(); rc != 0) return rc;
  }
  // Sequence numbers for every write request of the transfer, kept for
  // its retry.
  const uint32_t max_io = max_io_;
  const uint64_t first_seq = next_seq_;
  if (type == FrameType::kWrite) next_seq_ += length / max_io + 1;
  for (int attempt = 0;; ++attempt) {
    const int64_t n = TransferOnce(type, path, offset, region, region_offset,
                                   length, first_seq);
    if (conn_ != nullptr || attempt > 0 || !ConnectionFailed(-n)) return n;
    ++retries_;
    if (int rc = Reconnect(); rc != 0) return rc;
    if (max_io_ != max_io) return n;  // cut elsewhere now: not the same
  }
}

int64_t RdmaAgentClient::TransferOnce(FrameType type, std::string_view path,
                                      uint64_t offset,
                                      const RdmaMemoryRegion& region,
                                      size_t region_offset, size_t length,
                                      uint64_t first_seq) {
  struct InFlight {
    uint64_t request_id;
    uint32_t length;
    size_t at;  // where in the transfer
  };
  auto* local = static_cast<const uint8_t*>(region.local_addr());
  std::deque<InFlight> in_flight;
  size_t sent = 0;  // bytes asked for so far
  size_t done = 0;  // bytes confirmed, in order
  bool stop = false;
  int64_t error = 0;
  std::vector<uint8_t> payload;
  while (!in_flight.empty() || (!stop && sent < length)) {
    // Keep up to `credits` requests in flight.
    while (!stop && sent < length && in_flight.size() < credits_) {
      IoBody io;
      io.seq = type == FrameType::kWrite ? first_seq + sent / max_io_ : 0;
      io.offset = offset + sent;
      io.length =
          static_cast<uint32_t>(std::min<size_t>(length - sent, max_io_));
      io.remote_addr = region.remote_base() + region_offset + sent;
      io.rkey = region.rkey();
      io.path = std::string(path);
      if (checked_ && type == FrameType::kWrite) {
        io.data_crc = Crc32c(0, local + region_offset + sent, io.length);
      }
      payload.clear();
      EncodeIo(io, &payload);
      const uint64_t request_id = next_request_id_++;
      if (int rc = conn_->SendFrame(type, request_id, payload,
                                    options_.io_timeout_ms);
          rc != 0) {
        return Fail(-rc, "sending a request: " + conn_->last_error());
      }
      in_flight.push_back({request_id, io.length, sent});
      sent += io.length;
    }
    const InFlight next = in_flight.front();
    in_flight.pop_front();
    uint32_t data_crc = 0;
    const int64_t n = ReceiveReply(next.request_id, next.length, &data_crc);
    if (conn_ == nullptr) {
      // The connection is gone mid-transfer: an error, not a short count,
      // which would read as the end of the file (or a full disk). The
      // caller redoes the whole range (Transfer, once) or elsewhere.
      return n;
    }
    if (checked_ && type == FrameType::kRead && n > 0 &&
        Crc32c(0, local + region_offset + next.at, static_cast<size_t>(n)) !=
            data_crc) {
      return Fail(EBADMSG, "read data CRC mismatch");
    }
    if (stop) continue;  // draining replies after a short or failed one
    if (n < 0) {
      error = n;
      stop = true;
      continue;
    }
    done += static_cast<size_t>(n);
    // Short: end of file for a read, a full disk for a write; the requests
    // after it are answered but not counted.
    if (static_cast<uint32_t>(n) < next.length) stop = true;
  }
  if (done == 0 && error != 0) return error;
  return static_cast<int64_t>(done);
}

}  // namespace fgds::remote
