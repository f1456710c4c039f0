// File: backend/remote/agent/agent_service.h
//
// AgentService: what `fgds agent` does the same way over either transport
// (agent_server.h for TCP, rdma_agent_server.h for RDMA): the key
// handshake, reads from the store, writes applied once per (client,
// sequence number) through the WriteLog, syncs, and the counters.
//
// Durability: on a connection that negotiated kHelloDeferSync a write is
// acknowledged once the store took it, and the daemon's kSync makes the
// file's writes durable (its fsync and close); on any other connection
// each write is synced before its reply, and a failed sync is the
// write's result. A transport
// moves the frames and the data; the decisions are made here, once.
//
// Example (a transport's connection thread):
//   StreamChannel channel(stream, peer);  // a HandshakeChannel
//   Handshaken h = service.Handshake(channel, /*can_check_payloads=*/true);
//   if (h.client_id == 0) return;  // refused, and told why
//   ... service.Read(io, buffer) / service.Write(h, io, data) /
//       service.Sync(io) ...
//
// Thread safety: every method may be called from any thread.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVICE_H_
#define FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/write_log.h"
#include "backend/remote/agent_handshake.h"
#include "backend/remote/agent_key.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/socket_address.h"

namespace fgds::remote {

struct AgentServerOptions {
  HostPort listen;
  AgentKey key;
  uint32_t max_connections = 64;
  // A daemon must finish the handshake within this.
  int handshake_timeout_ms = 5000;
  // Once a frame's header arrived, its payload must within this, and a
  // reply must be taken within this (a daemon that stops reading cannot
  // hold a thread for longer).
  int io_timeout_ms = 30000;
  // What the agent grants each connection (ChallengeBody).
  uint32_t credits = 16;
  uint32_t max_io = kMaxIoBytes;
};

struct AgentCounters {
  uint64_t connections = 0;
  uint64_t refused_connections = 0;  // over max_connections
  uint64_t auth_failures = 0;
  uint64_t protocol_errors = 0;
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t writes_deduplicated = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t syncs = 0;        // store syncs: kSync requests, synced writes
  uint64_t sync_errors = 0;  // of those, failed
  uint64_t crc_errors = 0;   // request payloads whose CRC did not match
};

// Whether a server may start with these limits: max_connections and
// credits above 0, credits at most max_credits (what the transport can
// take in flight: an RDMA server posts a receive per credit), max_io in
// 1..kMaxIoBytes. InvalidArgument naming the limits otherwise.
absl::Status CheckServerLimits(const AgentServerOptions& options,
                               uint32_t max_credits);

// A handshake's outcome: client_id 0 when the daemon was refused (and told
// why); checked when both sides agreed on payload CRCs; deferred_sync when
// the daemon will send kSync (kHelloDeferSync).
struct Handshaken {
  uint64_t client_id = 0;
  bool checked = false;
  bool deferred_sync = false;
};

class AgentService {
 public:
  AgentService(const AgentServerOptions& options,
               std::unique_ptr<AgentStore> store);
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  const AgentStore& store() const { return *store_; }
  AgentCounters counters() const;

  // The daemon proves the cluster key (agent_auth.h; the agent proves
  // first). can_check_payloads: whether this transport can grant payload
  // CRCs (over RDMA the data travels in no frame, so it cannot).
  Handshaken Handshake(HandshakeChannel& channel, bool can_check_payloads);

  // A read of io.length bytes into buffer: the store's result, counted.
  int64_t Read(const IoBody& io, uint8_t* buffer);
  // A write of io.length bytes from data, applied at most once per
  // (client_id, io.seq): a retry gets the first attempt's result. Synced
  // before it returns unless the connection deferred syncs.
  int64_t Write(const Handshaken& who, const IoBody& io, const uint8_t* data);
  // kSync: the file io.path's acknowledged writes made durable: 0 or
  // -errno.
  int64_t Sync(const IoBody& io);

  void CountConnection() { counters_.connections.fetch_add(1); }
  void CountRefusedConnection() { counters_.refused_connections.fetch_add(1); }
  void CountProtocolError() { counters_.protocol_errors.fetch_add(1); }
  void CountCrcError() { counters_.crc_errors.fetch_add(1); }
  uint32_t instance() const { return instance_; }

 private:
  // The store's Sync, counted.
  int SyncStore(const std::string& path);

  const AgentServerOptions options_;
  const std::unique_ptr<AgentStore> store_;
  // Random, never 0 (ChallengeBody::instance).
  const uint32_t instance_;
  WriteLog write_log_;
  struct AtomicCounters {
    std::atomic<uint64_t> connections{0}, refused_connections{0},
        auth_failures{0}, protocol_errors{0}, reads{0}, writes{0},
        writes_deduplicated{0}, bytes_read{0}, bytes_written{0}, syncs{0},
        sync_errors{0}, crc_errors{0};
  };
  AtomicCounters counters_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVICE_H_
