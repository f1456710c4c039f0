#include "backend/remote/agent_address.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fgds::remote {

absl::StatusOr<std::vector<AgentAddress>> ParseAgentList(
    const std::string& text) {
  std::vector<AgentAddress> out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("agent list '", text, "': an empty item"));
    }
    AgentTransport transport = AgentTransport::kTcp;
    absl::string_view rest = item;
    if (absl::ConsumePrefix(&rest, "rdma://")) {
      transport = AgentTransport::kRdma;
    } else if (!absl::ConsumePrefix(&rest, "tcp://") &&
               absl::StrContains(item, "://")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "agent '", item, "': the transport is tcp:// or rdma://"));
    }
    auto address = ParseHostPort(std::string(rest));
    if (!address.ok()) return address.status();
    if (address->port == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("agent '", item, "': port 0 names no agent"));
    }
    out.emplace_back(*std::move(address), transport);
  }
  return out;
}

std::string AgentAddressText(const AgentAddress& agent) {
  const bool v6 = absl::StrContains(agent.host, ':');
  return absl::StrCat(agent.transport == AgentTransport::kRdma ? "rdma://" : "",
                      v6 ? "[" : "", agent.host, v6 ? "]" : "", ":",
                      agent.port);
}

}  // namespace fgds::remote
