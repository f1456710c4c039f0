#include "backend/remote/agent_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/errno_status.h"

namespace fgds::remote {

absl::Status MakeNonce(Nonce* out) {
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = getrandom(out->data() + got, out->size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("getrandom", errno);
    got += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ComputeProof(const AgentKey& key, AuthRole role,
                          uint64_t client_id, const Nonce& client_nonce,
                          const Nonce& agent_nonce, Proof* out) {
  constexpr std::string_view kLabel = "fgds-agent-v1";
  const std::string_view role_name =
      role == AuthRole::kAgent ? "agent" : "daemon";
  std::vector<uint8_t> message;
  message.insert(message.end(), kLabel.begin(), kLabel.end());
  message.push_back(0);
  message.insert(message.end(), role_name.begin(), role_name.end());
  message.push_back(0);
  for (int i = 0; i < 8; ++i) {
    message.push_back(static_cast<uint8_t>(client_id >> (8 * i)));
  }
  message.insert(message.end(), client_nonce.begin(), client_nonce.end());
  message.insert(message.end(), agent_nonce.begin(), agent_nonce.end());
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()),
           message.data(), message.size(), out->data(), &length) == nullptr ||
      length != out->size()) {
    return absl::ResourceExhaustedError("HMAC-SHA256 failed (out of memory?)");
  }
  return absl::OkStatus();
}

bool ProofMatches(const Proof& expected, const Proof& received) {
  return CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

}  // namespace fgds::remote
