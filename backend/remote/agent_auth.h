// File: backend/remote/agent_auth.h
//
// Mutual proof of the cluster key (agent_key.h) between a daemon and an
// agent, without sending the key: each side sends a fresh random nonce, and
// each proves the key with HMAC-SHA256 over both nonces, the daemon's client
// id and its own role:
//
//   proof(role) = HMAC-SHA256(key, "fgds-agent-v1" | role | client_id |
//                             client_nonce | agent_nonce)
//
// The role ("agent" or "daemon") makes one side's proof useless as the
// other's, and the nonces make every proof useless on another connection.
// The agent proves first (in its challenge): a daemon never sends a proof
// to a server that has not shown it holds the key.
//
// What this does not give: confidentiality or integrity of the data that
// follows (the payload CRC catches corruption, not an attacker on the
// path). The cluster network is trusted as Ceph's own public network is;
// docs/agent.md says so.
//
// Thread safety: pure functions.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AUTH_H_
#define FGDS_BACKEND_REMOTE_AGENT_AUTH_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "backend/remote/agent_key.h"

namespace fgds::remote {

using Nonce = std::array<uint8_t, 32>;
using Proof = std::array<uint8_t, 32>;

enum class AuthRole { kAgent, kDaemon };

// A nonce from the kernel's random source (getrandom).
absl::Status MakeNonce(Nonce* out);

// Fails only when the crypto library does (out of memory): the caller then
// ends the handshake, never sends or accepts a placeholder.
absl::Status ComputeProof(const AgentKey& key, AuthRole role,
                          uint64_t client_id, const Nonce& client_nonce,
                          const Nonce& agent_nonce, Proof* out);

// Compares in constant time.
bool ProofMatches(const Proof& expected, const Proof& received);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AUTH_H_
