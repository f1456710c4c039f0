// File: backend/remote/agent_key.h
//
// The cluster key that daemons and agents prove to each other (agent_auth.h)
// before any file data moves. It is a file of at least 32 bytes of secret,
// made once per cluster and copied to every storage and GPU host, e.g.
//
//   head -c 48 /dev/urandom | base64 > /etc/fgds/agent.key
//   chmod 600 /etc/fgds/agent.key
//
// LoadAgentKey refuses, naming the problem, a key that is not a regular
// file, that others than its owner may read or write (as ssh refuses such
// private keys), or that is shorter than kMinAgentKeyBytes. A trailing
// newline is not part of the key, so `echo`-made and `head -c`-made files
// work alike.
#ifndef FGDS_BACKEND_REMOTE_AGENT_KEY_H_
#define FGDS_BACKEND_REMOTE_AGENT_KEY_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace fgds::remote {

inline constexpr size_t kMinAgentKeyBytes = 32;
inline constexpr size_t kMaxAgentKeyBytes = 4096;

struct AgentKey {
  std::string secret;
};

absl::StatusOr<AgentKey> LoadAgentKey(const std::string& path);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_KEY_H_
