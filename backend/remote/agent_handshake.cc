#include "backend/remote/agent_handshake.h"

#include <sys/uio.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_auth.h"
#include "backend/remote/frame_stream.h"

namespace fgds::remote {
namespace {

// The largest payload a daemon takes during the handshake: a Challenge, or
// an Error with its message.
constexpr uint32_t kMaxDaemonHandshakePayload = 128;

}  // namespace

int StreamChannel::Receive(FrameHeader* header, std::vector<uint8_t>* payload,
                           uint32_t max_payload, int timeout_ms) {
  if (int rc = stream_.ReceiveHeader(header, max_payload, timeout_ms);
      rc != 0) {
    return rc;
  }
  payload->resize(header->payload_len);
  if (int rc =
          stream_.ReceivePayload(payload->data(), payload->size(), timeout_ms);
      rc != 0) {
    return rc;
  }
  return stream_.FinishPayload();
}

int StreamChannel::Send(FrameType type, std::span<const uint8_t> payload,
                        int timeout_ms) {
  struct iovec part = {const_cast<uint8_t*>(payload.data()), payload.size()};
  return stream_.Send(type, 0, {&part, payload.empty() ? 0u : 1u}, timeout_ms);
}

void StreamChannel::SendError(int err, const std::string& message) {
  std::vector<uint8_t> payload;
  EncodeError({err, message}, &payload);
  Send(FrameType::kError, payload, 1000);
}

int RunDaemonHandshake(HandshakeChannel& channel, const AgentKey& key,
                       uint64_t client_id, uint32_t want_flags, int timeout_ms,
                       ChallengeBody* challenge, std::string* why) {
  auto fail = [&](int err, const std::string& what) {
    const std::string detail = channel.Detail();
    *why = detail.empty() ? what : absl::StrCat(what, ": ", detail);
    return -err;
  };
  HelloBody hello;
  hello.flags = want_flags;
  hello.client_id = client_id;
  if (!MakeNonce(&hello.client_nonce).ok()) return fail(EIO, "no randomness");
  std::vector<uint8_t> payload;
  EncodeHello(hello, &payload);
  if (int rc = channel.Send(FrameType::kHello, payload, timeout_ms); rc != 0) {
    return fail(-rc, "sending hello");
  }
  FrameHeader header;
  auto receive = [&](FrameType want, const char* what) -> int {
    int rc = channel.Receive(&header, &payload, kMaxDaemonHandshakePayload,
                             timeout_ms);
    if (rc != 0) return fail(-rc, absl::StrCat("waiting for ", what));
    if (header.type == FrameType::kError) {
      ErrorBody error;
      if (DecodeError(payload, &error) != 0) {
        return fail(EPROTO, "bad error frame");
      }
      // A hostile agent's errno must not read as success.
      *why = error.message;
      return error.error > 0 ? -error.error : -EPROTO;
    }
    if (header.type != want) {
      return fail(EPROTO, absl::StrCat("expected ", what));
    }
    return 0;
  };
  if (int rc = receive(FrameType::kChallenge, "the challenge"); rc != 0) {
    return rc;
  }
  if (DecodeChallenge(payload, challenge) != 0) {
    return fail(EPROTO, "malformed challenge");
  }
  // The agent proves the key first.
  Proof expected;
  if (!ComputeProof(key, AuthRole::kAgent, hello.client_id, hello.client_nonce,
                    challenge->agent_nonce, &expected)
           .ok()) {
    return fail(ENOMEM, "cannot compute the proof");
  }
  if (!ProofMatches(expected, challenge->agent_proof)) {
    return fail(EACCES, "the agent does not hold our cluster key");
  }
  if ((challenge->flags & ~want_flags) != 0) {
    return fail(EPROTO, "the agent granted what we did not ask for");
  }
  if ((want_flags & kHelloWantChecked) != 0 &&
      (challenge->flags & kHelloWantChecked) == 0) {
    return fail(EPROTO, "the agent refused checked payloads");
  }
  AuthBody auth;
  if (!ComputeProof(key, AuthRole::kDaemon, hello.client_id, hello.client_nonce,
                    challenge->agent_nonce, &auth.client_proof)
           .ok()) {
    return fail(ENOMEM, "cannot compute the proof");
  }
  payload.clear();
  EncodeAuth(auth, &payload);
  if (int rc = channel.Send(FrameType::kAuth, payload, timeout_ms); rc != 0) {
    return fail(-rc, "sending the proof");
  }
  if (int rc = receive(FrameType::kWelcome, "the welcome"); rc != 0) return rc;
  if (!payload.empty()) return fail(EPROTO, "malformed welcome");
  return 0;
}

}  // namespace fgds::remote
