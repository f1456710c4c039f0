// File: backend/remote/rdma_agent_client.h
//
// RdmaAgentClient: the daemon's end of one RDMA connection to an
// `fgds agent --transport rdma` (agent/rdma_agent_server.h). The same
// protocol and handshake as the TCP client (agent_client.h: the agent
// proves the cluster key first, then the daemon), over SEND/RECV; but the
// file data never travels in a frame: a read request names a region of the
// daemon's memory that the agent RDMA-WRITEs the data into, a write request
// one the agent RDMA-READs it from.
//
// Example:
//   auto client = RdmaAgentClient::Connect(options);
//   auto region = (*client)->RegisterHost(buf, size);   // once per buffer
//   int64_t n = (*client)->Read("ckpt/shard-0", 0, **region, 0, size);
//
// Memory: RegisterHost (ibv_reg_mr) for host memory, RegisterDmabuf
// (ibv_reg_dmabuf_mr) for a dma-buf such as GPU memory exported by its
// driver. A region stays valid across reconnections (it belongs to the
// client's protection domain, not to a connection). Registration of
// dma-bufs needs a NIC and driver that take them; soft-RoCE does not.
//
// Requests: a transfer is split into requests of at most max_io bytes,
// and up to `credits` of them are in flight at once (the agent answers
// them in order). Results: bytes moved (short at end of file), or -errno:
// the file's error as the agent's store reported it, or the connection's
// (ECONNREFUSED, ETIMEDOUT, ECONNRESET, EACCES for a wrong key, EPROTO,
// EBADMSG for data whose CRC did not match); last_error() says more. A
// connection that fails mid-transfer gives its errno even when some
// requests completed (a short count would mean end of file).
//
// Retries: a transfer whose connection failed (reset, timeout, a malformed
// reply, a CRC mismatch) is redone once, whole, on a new connection, and
// counted (retries()): reads are idempotent, and each write request keeps
// its sequence number, so the agent applies the ones it had applied
// already once (write_log.h). A transfer is not retried when the new
// connection's agent takes another max_io (its requests would be cut
// elsewhere, under other sequence numbers). So a caller that falls back
// to another path on an error waits at most two rounds of the timeouts.
//
// Durability: with options.deferred_sync (if the agent grants it) a write
// is acknowledged from the agent's store before it is durable, and Sync
// makes a file's writes durable; without it, the agent syncs each write
// before its reply. agent_instance() tells a restarted agent (which lost
// what it had not synced) from a reconnected one, as over TCP
// (agent_client.h, unsynced_writes.h).
//
// Checked payloads (options.checked, if the agent grants them): the data
// travels in no frame, so its CRC-32C travels in the request (a write:
// the agent checks what its RDMA READ got) and in the reply (a read: this
// client checks what landed in the region). A mismatch is EBADMSG,
// counted (crc_errors()), and retried as above. Host regions only: the
// CPU cannot read a dma-buf's memory to sum it (EINVAL).
//
// Thread safety: thread-compatible (one call at a time).
#ifndef FGDS_BACKEND_REMOTE_RDMA_AGENT_CLIENT_H_
#define FGDS_BACKEND_REMOTE_RDMA_AGENT_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backend/remote/agent_key.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/rdma_connection.h"
#include "backend/remote/socket_address.h"

namespace fgds::remote {

struct RdmaAgentClientOptions {
  HostPort agent;
  AgentKey key;
  int connect_timeout_ms = 5000;
  // Per request: its reply must have come within this.
  int io_timeout_ms = 30000;
  // The daemon's identity for write deduplication (0: chosen here).
  uint64_t client_id = 0;
  // CRC-32C of every transfer's data, checked end to end.
  bool checked = false;
  // Ask the agent to acknowledge writes before syncing them (the caller
  // then calls Sync where it needs durability).
  bool deferred_sync = false;
  // The protection domain to connect in (null: one of its own), so that
  // clients sharing it share their memory regions (agent_pool.h). It must
  // belong to the device the route to the agent leads to.
  std::shared_ptr<RdmaProtectionDomain> pd;
};

class RdmaAgentClient {
 public:
  static absl::StatusOr<std::unique_ptr<RdmaAgentClient>> Connect(
      RdmaAgentClientOptions options);
  ~RdmaAgentClient();
  RdmaAgentClient(const RdmaAgentClient&) = delete;
  RdmaAgentClient& operator=(const RdmaAgentClient&) = delete;

  // Registers host memory for the agent to write into and read from.
  absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>> RegisterHost(void* addr,
                                                                 size_t length);
  // Registers `length` bytes at `fd_offset` of the dma-buf `fd`. Untested:
  // soft-RoCE takes no dma-buf regions and the GPU machine has no RDMA
  // NIC (docs/agent.md).
  absl::StatusOr<std::unique_ptr<RdmaMemoryRegion>> RegisterDmabuf(
      int fd, uint64_t fd_offset, size_t length);

  // Reads `length` bytes of `path` at `offset` into `region` at
  // `region_offset`; writes them from there.
  int64_t Read(std::string_view path, uint64_t offset,
               const RdmaMemoryRegion& region, size_t region_offset,
               size_t length);
  int64_t Write(std::string_view path, uint64_t offset,
                const RdmaMemoryRegion& region, size_t region_offset,
                size_t length);
  // The file's writes acknowledged by this agent made durable: 0 or
  // -errno. Retried once on a new connection, as a transfer.
  int Sync(std::string_view path);

  uint32_t max_io() const { return max_io_; }
  uint32_t credits() const { return credits_; }
  uint64_t client_id() const { return options_.client_id; }
  uint64_t connects() const { return connects_; }
  bool checked() const { return checked_; }
  bool deferred_sync() const { return deferred_sync_; }
  // The agent process this connection reached (ChallengeBody::instance).
  uint32_t agent_instance() const { return instance_; }
  // Transfers redone on a new connection; data whose CRC did not match.
  uint64_t retries() const { return retries_; }
  uint64_t crc_errors() const { return crc_errors_; }
  const std::string& last_error() const { return last_error_; }
  // Whether the connection is up: false after a failure of the connection
  // (the next call connects again), true after a file's error.
  bool connected() const { return conn_ != nullptr; }
  // Where regions for this client are registered (null before the first
  // connection, unless given in the options).
  const std::shared_ptr<RdmaProtectionDomain>& domain() const { return pd_; }

 private:
  explicit RdmaAgentClient(RdmaAgentClientOptions options);
  // (Re)connects and runs the handshake: 0 or -errno (last_error_ set).
  int Reconnect();
  int64_t Transfer(FrameType type, std::string_view path, uint64_t offset,
                   const RdmaMemoryRegion& region, size_t region_offset,
                   size_t length);
  // One attempt of a Transfer on the current connection; write request i
  // has sequence number first_seq + i.
  int64_t TransferOnce(FrameType type, std::string_view path, uint64_t offset,
                       const RdmaMemoryRegion& region, size_t region_offset,
                       size_t length, uint64_t first_seq);
  // One kSync on the current connection.
  int SyncOnce(std::string_view path);
  // Receives the reply to `request_id`: its result (and *data_crc), or
  // -errno after which the connection is gone.
  int64_t ReceiveReply(uint64_t request_id, uint32_t length,
                       uint32_t* data_crc);
  int Fail(int err, std::string message);

  RdmaAgentClientOptions options_;
  std::shared_ptr<RdmaProtectionDomain> pd_;
  std::unique_ptr<RdmaConnection> conn_;
  uint32_t max_io_ = 0;
  uint32_t credits_ = 0;
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

#endif  // FGDS_BACKEND_REMOTE_RDMA_AGENT_CLIENT_H_
