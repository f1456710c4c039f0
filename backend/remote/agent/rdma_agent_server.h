// File: backend/remote/agent/rdma_agent_server.h
//
// RdmaAgentServer: the RDMA side of `fgds agent` (--transport rdma). It
// listens with the RDMA connection manager, accepts RC queue pairs
// (rdma_connection.h), makes each daemon prove the cluster key exactly as
// the TCP server does (agent_auth.h), then serves reads and writes from
// the same AgentStore and WriteLog: a read goes from the store into the
// connection's registered buffer and from there, by RDMA WRITE, into the
// daemon's region named in the request; a write's data comes by RDMA READ
// from the daemon's region into that buffer and then goes to the store.
// The reply (a SEND) follows the RDMA WRITE on the same queue pair, so the
// daemon sees the data before the reply.
//
// Bounded like the TCP server: max_connections (one thread each; the next
// is rejected with the reason in the reject's private data), handshake
// frames only until the key is proven (and no memory of the agent is ever
// open to the daemon's RDMA: its buffers are registered for local access
// only), a deadline on every RDMA operation and reply, one max_io buffer
// per connection. Requests carry no data over RDMA, so a request is one
// message slot (4 KiB path at most).
//
// Thread safety: as AgentServer.
#ifndef FGDS_BACKEND_REMOTE_AGENT_RDMA_AGENT_SERVER_H_
#define FGDS_BACKEND_REMOTE_AGENT_RDMA_AGENT_SERVER_H_

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "backend/remote/agent/agent_service.h"
#include "backend/remote/agent/agent_store.h"
#include "backend/remote/agent/connection_threads.h"
#include "common/mutex.h"

namespace fgds::remote {

class RdmaConnection;

class RdmaAgentServer {
 public:
  // options.listen must be an address of an RDMA device (an IP of a RoCE
  // netdev, or 0.0.0.0 for all of them).
  static absl::StatusOr<std::unique_ptr<RdmaAgentServer>> Start(
      AgentServerOptions options, std::unique_ptr<AgentStore> store);
  ~RdmaAgentServer();
  RdmaAgentServer(const RdmaAgentServer&) = delete;
  RdmaAgentServer& operator=(const RdmaAgentServer&) = delete;

  std::string address() const { return address_; }
  const AgentStore& store() const { return service_.store(); }
  AgentCounters counters() const { return service_.counters(); }
  void Stop();

 private:
  RdmaAgentServer(AgentServerOptions options, std::unique_ptr<AgentStore> store,
                  rdma_event_channel* channel, rdma_cm_id* listen_id,
                  int wake_fd);
  void AcceptLoop();
  void Admit(rdma_cm_id* id, const rdma_conn_param& request);
  void Serve(ConnectionThreads<RdmaConnection>::Slot* slot, rdma_cm_id* id,
             rdma_conn_param request);
  void ServeRequests(RdmaConnection& conn, const Handshaken& who);

  const AgentServerOptions options_;
  AgentService service_;
  rdma_event_channel* const channel_;
  rdma_cm_id* const listen_id_;
  const int wake_fd_;
  std::string address_;

  ConnectionThreads<RdmaConnection> connections_;
  std::thread accept_thread_;
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_RDMA_AGENT_SERVER_H_
