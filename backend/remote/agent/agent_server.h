// File: backend/remote/agent/agent_server.h
//
// AgentServer: the TCP side of `fgds agent`. It accepts daemons, makes each
// prove the cluster key (agent_auth.h), then serves their reads and writes
// of file extents from an AgentStore, one request at a time per connection
// and in order (so a daemon may pipeline up to the credits it was given,
// and the replies come back in the order of the requests).
//
// Example:
//   auto server = AgentServer::Start(options, std::move(store));
//   ... server->address() ...
//   server->Stop();
//
// Bounded: at most max_connections connections (one thread each; the next
// is told "connection limit" and closed), handshake frames only until the
// key is proven, a deadline on every frame once it started, one data buffer
// (max_io) per connection. A peer that breaks the protocol gets a kError
// frame naming the problem and is disconnected; a file error (ENOENT,
// EACCES, EIO...) is only that request's result.
//
// Thread safety: Start, address, counters and Stop may be called from any
// thread; Stop once.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVER_H_
#define FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVER_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/write_log.h"
#include "backend/remote/agent_key.h"
#include "backend/remote/agent_wire.h"
#include "backend/remote/socket_address.h"
#include "common/mutex.h"

namespace fgds::remote {

class FrameStream;

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
};

class AgentServer {
 public:
  static absl::StatusOr<std::unique_ptr<AgentServer>> Start(
      AgentServerOptions options, std::unique_ptr<AgentStore> store);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // The address it listens on, with the port the kernel chose for port 0.
  std::string address() const { return address_; }
  const AgentStore& store() const { return *store_; }
  AgentCounters counters() const;
  // Stops accepting, disconnects every daemon and waits for their threads.
  void Stop();

 private:
  struct Connection {
    std::thread thread;
    FrameStream* stream = nullptr;  // set while served, under mu_
    bool finished = false;
  };

  AgentServer(AgentServerOptions options, std::unique_ptr<AgentStore> store,
              int listen_fd, int wake_fd);
  void AcceptLoop();
  void Admit(int fd);
  void Serve(Connection* connection, int fd);
  // Returns the client id on success, 0 after a failed handshake (told).
  uint64_t Handshake(FrameStream& stream, const std::string& peer);
  // One request; false when the connection must end.
  bool ServeRequest(FrameStream& stream, uint64_t client_id,
                    std::vector<uint8_t>& buffer, const std::string& peer);
  void ReapFinished() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AgentServerOptions options_;
  const std::unique_ptr<AgentStore> store_;
  const int listen_fd_;
  const int wake_fd_;  // eventfd: Stop wakes the accept loop
  std::string address_;
  WriteLog write_log_;

  Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Connection> connections_ ABSL_GUARDED_BY(mu_);
  std::thread accept_thread_;

  struct AtomicCounters {
    std::atomic<uint64_t> connections{0}, refused_connections{0},
        auth_failures{0}, protocol_errors{0}, reads{0}, writes{0},
        writes_deduplicated{0}, bytes_read{0}, bytes_written{0};
  };
  AtomicCounters counters_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVER_H_
