// File: backend/remote/agent_address.h
//
// AgentAddress: one item of `fgds mount --agents`: an agent's HOST:PORT and
// the transport it serves (`fgds agent --transport`). An agent serves one
// transport, so the daemon must be told which: "HOST:PORT" or
// "tcp://HOST:PORT" is the TCP twin, "rdma://HOST:PORT" the verbs
// transport (librdmacm resolves HOST to the RDMA device that routes to it).
//
// Example:
//   auto agents = ParseAgentList("rdma://10.0.0.7:7070,10.0.0.8:7070");
//   (*agents)[0].transport == AgentTransport::kRdma
#ifndef FGDS_BACKEND_REMOTE_AGENT_ADDRESS_H_
#define FGDS_BACKEND_REMOTE_AGENT_ADDRESS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backend/remote/socket_address.h"

namespace fgds::remote {

enum class AgentTransport : uint8_t { kTcp, kRdma };

struct AgentAddress : HostPort {
  AgentAddress() = default;
  // Implicit: a bare HostPort is a TCP agent, as before the prefixes.
  AgentAddress(HostPort address,  // NOLINT(google-explicit-constructor)
               AgentTransport transport_in = AgentTransport::kTcp)
      : HostPort(std::move(address)), transport(transport_in) {}
  AgentTransport transport = AgentTransport::kTcp;
};

// Splits and checks a comma-separated list of [tcp://|rdma://]HOST:PORT;
// empty items, other schemes and port 0 are refused, naming the item.
absl::StatusOr<std::vector<AgentAddress>> ParseAgentList(
    const std::string& text);

// "HOST:PORT" for TCP, "rdma://HOST:PORT" for RDMA (IPv6 hosts bracketed):
// how logs and `fgds stat` name the agent.
std::string AgentAddressText(const AgentAddress& agent);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_ADDRESS_H_
