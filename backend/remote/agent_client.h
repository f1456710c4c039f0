// File: backend/remote/agent_client.h
//
// AgentClient: the daemon's end of one connection to an `fgds agent`
// (agent_server.h), over TCP: it proves the cluster key, then reads and
// writes file extents by path, with the data in the caller's buffer.
//
// Example:
//   auto client = AgentClient::Connect(options);
//   int64_t n = (*client)->Read("ckpt/shard-0", 0, buf, size);
//
// Reliability: a request that fails for the connection's sake (reset,
// timeout, a malformed reply, a payload whose CRC does not match) is
// retried once on a new connection, and counted (retries(),
// crc_errors()). Reads and syncs are idempotent; a write keeps its
// sequence number, and the agent applies a sequence number once
// (write_log.h), so a retried write cannot be applied twice. Requests
// longer than the agent's max_io are split.
//
// Durability: with deferred_sync (if the agent grants it) a write is
// acknowledged from the agent's store before it is durable, and Sync
// makes a file's writes durable; without it, the agent syncs each write
// before its reply. A retry may find another agent instance (restarted:
// agent_instance() changed), which lost the writes it had not synced: the
// caller tracks that (agent_pool.h).
//
// Results: bytes moved, or -errno: the file's error as the agent's store
// reported it (ENOENT, EACCES, EIO...), or the connection's (ECONNREFUSED,
// ETIMEDOUT, ECONNRESET, EACCES for a wrong key, EPROTO), after which the
// caller may fall back to another path. last_error() says more.
//
// Thread safety: thread-compatible (one call at a time); a daemon keeps
// one per worker, or a pool.
#ifndef FGDS_BACKEND_REMOTE_AGENT_CLIENT_H_
#define FGDS_BACKEND_REMOTE_AGENT_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backend/remote/agent_key.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/socket_address.h"

namespace fgds::remote {

class FrameStream;

struct AgentClientOptions {
  HostPort agent;
  AgentKey key;
  // CRC-32C over every payload, both ways (the agent must grant it).
  bool checked = false;
  int connect_timeout_ms = 5000;
  // Per request: the reply must have come within this.
  int io_timeout_ms = 30000;
  // The daemon's identity for write deduplication: random per daemon
  // start (0: chosen here). Connections of one daemon share it.
  uint64_t client_id = 0;
  // Ask the agent to acknowledge writes before syncing them (the caller
  // then calls Sync where it needs durability).
  bool deferred_sync = false;
};

class AgentClient {
 public:
  // Connects and authenticates; the status names the agent and the reason.
  static absl::StatusOr<std::unique_ptr<AgentClient>> Connect(
      AgentClientOptions options);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  int64_t Read(std::string_view path, uint64_t offset, void* out,
               size_t length);
  int64_t Write(std::string_view path, uint64_t offset, const void* data,
                size_t length);
  // The file's writes acknowledged by this agent made durable: 0 or -errno.
  int Sync(std::string_view path);

  uint32_t max_io() const { return max_io_; }
  bool checked() const { return checked_; }
  // Whether the agent acknowledges writes before syncing them.
  bool deferred_sync() const { return deferred_sync_; }
  // The agent process this connection reached (ChallengeBody::instance).
  uint32_t agent_instance() const { return instance_; }
  uint64_t client_id() const { return options_.client_id; }
  const std::string& last_error() const { return last_error_; }
  // Whether the connection is up: false after a request failed for the
  // connection's sake (and its retry), true after a file's error.
  bool connected() const { return stream_ != nullptr; }
  // Connections made, the first included (a retry makes one more).
  uint64_t connects() const { return connects_; }
  // Requests sent again on a new connection after the first attempt's
  // connection failed.
  uint64_t retries() const { return retries_; }
  // Payloads whose CRC did not match: replies here, and requests the agent
  // refused for it (each then counts as the connection's failure).
  uint64_t crc_errors() const { return crc_errors_; }

 private:
  explicit AgentClient(AgentClientOptions options);
  // (Re)connects and runs the handshake: 0 or -errno (last_error_ set).
  int Reconnect();
  // Read and Write: the path checked, then requests of at most max_io_
  // bytes until `length` moved or one comes back short or failed.
  int64_t Transfer(FrameType type, std::string_view path, uint64_t offset,
                   uint8_t* buffer, size_t length);
  // One request of at most max_io_ bytes, retried once on a new connection
  // if the connection failed.
  int64_t Request(FrameType type, std::string_view path, uint64_t offset,
                  void* buffer, size_t length);
  int64_t RequestOnce(FrameType type, const IoBody& io, void* buffer);
  int Fail(int err, std::string message);

  AgentClientOptions options_;
  std::unique_ptr<FrameStream> stream_;
  uint32_t max_io_ = 0;
  bool checked_ = false;
  bool deferred_sync_ = false;
  uint32_t instance_ = 0;
  uint64_t next_request_id_ = 1;
  uint64_t next_seq_ = 1;
  uint64_t connects_ = 0;
  uint64_t retries_ = 0;
  uint64_t crc_errors_ = 0;
  std::string last_error_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_CLIENT_H_
