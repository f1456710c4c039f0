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

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/remote/agent/agent_service.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/connection_threads.h"
#include "backend/remote/agent_wire.h"
#include "common/mutex.h"

namespace fgds::remote {

class FrameStream;

class AgentServer {
 public:
  static absl::StatusOr<std::unique_ptr<AgentServer>> Start(
      AgentServerOptions options, std::unique_ptr<AgentStore> store);
  ~AgentServer();
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // The address it listens on, with the port the kernel chose for port 0.
  std::string address() const { return address_; }
  const AgentStore& store() const { return service_.store(); }
  AgentCounters counters() const { return service_.counters(); }
  // Stops accepting, disconnects every daemon and waits for their threads.
  void Stop();

 private:
  AgentServer(AgentServerOptions options, std::unique_ptr<AgentStore> store,
              int listen_fd, int wake_fd);
  void AcceptLoop();
  void Admit(int fd);
  void Serve(ConnectionThreads<FrameStream>::Slot* slot, int fd);
  // One request; false when the connection must end.
  bool ServeRequest(FrameStream& stream, const Handshaken& who,
                    std::vector<uint8_t>& buffer, const std::string& peer);

  const AgentServerOptions options_;
  AgentService service_;
  const int listen_fd_;
  const int wake_fd_;  // eventfd: Stop wakes the accept loop
  std::string address_;

  ConnectionThreads<FrameStream> connections_;
  std::thread accept_thread_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_SERVER_H_
