#include "backend/remote/agent/agent_service.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_auth.h"
#include "common/log.h"

namespace fgds::remote {
namespace {

// The largest handshake payloads: a Hello (48 bytes) and an Auth (32).
constexpr uint32_t kMaxHandshakePayload = 64;

uint32_t RandomInstance() {
  Nonce random{};
  // Without randomness (never seen) the instance is still non-zero, and
  // the process id keeps restarts apart.
  uint32_t v = static_cast<uint32_t>(getpid());
  if (MakeNonce(&random).ok()) std::memcpy(&v, random.data(), sizeof(v));
  return v != 0 ? v : 1;
}

}  // namespace

absl::Status CheckServerLimits(const AgentServerOptions& options,
                               uint32_t max_credits) {
  if (options.max_connections == 0 || options.credits == 0 ||
      options.credits > max_credits || options.max_io == 0 ||
      options.max_io > kMaxIoBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("agent: max_connections must be > 0, credits in 1..",
                     max_credits, " and max_io in 1..", kMaxIoBytes));
  }
  return absl::OkStatus();
}

AgentService::AgentService(const AgentServerOptions& options,
                           std::unique_ptr<AgentStore> store)
    : options_(options),
      store_(std::move(store)),
      instance_(RandomInstance()) {}

AgentCounters AgentService::counters() const {
  AgentCounters c;
  c.connections = counters_.connections.load();
  c.refused_connections = counters_.refused_connections.load();
  c.auth_failures = counters_.auth_failures.load();
  c.protocol_errors = counters_.protocol_errors.load();
  c.reads = counters_.reads.load();
  c.writes = counters_.writes.load();
  c.writes_deduplicated = counters_.writes_deduplicated.load();
  c.bytes_read = counters_.bytes_read.load();
  c.bytes_written = counters_.bytes_written.load();
  c.syncs = counters_.syncs.load();
  c.sync_errors = counters_.sync_errors.load();
  c.crc_errors = counters_.crc_errors.load();
  return c;
}

Handshaken AgentService::Handshake(HandshakeChannel& channel,
                                   bool can_check_payloads) {
  const int timeout = options_.handshake_timeout_ms;
  FrameHeader header;
  std::vector<uint8_t> payload;
  HelloBody hello;
  int rc = channel.Receive(&header, &payload, kMaxHandshakePayload, timeout);
  if (rc == 0 && header.type != FrameType::kHello) rc = -EPROTO;
  if (rc == 0) rc = DecodeHello(payload, &hello);
  if (rc == 0 && hello.client_id == 0) rc = -EPROTO;
  if (rc != 0) {
    CountProtocolError();
    channel.SendError(-rc, "agent: expected a hello");
    return {};
  }
  ChallengeBody challenge;
  challenge.credits = options_.credits;
  challenge.max_io = options_.max_io;
  challenge.flags = hello.flags & kHelloDeferSync;
  if (can_check_payloads) challenge.flags |= hello.flags & kHelloWantChecked;
  challenge.instance = instance_;
  if (!MakeNonce(&challenge.agent_nonce).ok() ||
      !ComputeProof(options_.key, AuthRole::kAgent, hello.client_id,
                    hello.client_nonce, challenge.agent_nonce,
                    &challenge.agent_proof)
           .ok()) {
    channel.SendError(ENOMEM, "agent: cannot make a challenge");
    return {};
  }
  payload.clear();
  EncodeChallenge(challenge, &payload);
  if (channel.Send(FrameType::kChallenge, payload, timeout) != 0) return {};

  AuthBody auth;
  rc = channel.Receive(&header, &payload, kMaxHandshakePayload, timeout);
  if (rc == 0 && header.type != FrameType::kAuth) rc = -EPROTO;
  if (rc == 0) rc = DecodeAuth(payload, &auth);
  if (rc != 0) {
    CountProtocolError();
    channel.SendError(-rc, "agent: expected the key's proof");
    return {};
  }
  Proof expected;
  if (!ComputeProof(options_.key, AuthRole::kDaemon, hello.client_id,
                    hello.client_nonce, challenge.agent_nonce, &expected)
           .ok() ||
      !ProofMatches(expected, auth.client_proof)) {
    counters_.auth_failures.fetch_add(1);
    LogWarning("agent: %s did not prove the cluster key; disconnected",
               channel.peer().c_str());
    channel.SendError(EACCES, "agent: wrong cluster key");
    return {};
  }
  if (channel.Send(FrameType::kWelcome, {}, timeout) != 0) return {};
  return {hello.client_id, (challenge.flags & kHelloWantChecked) != 0,
          (challenge.flags & kHelloDeferSync) != 0};
}

int64_t AgentService::Read(const IoBody& io, uint8_t* buffer) {
  const int64_t result = store_->Read(io.path, io.offset, buffer, io.length);
  counters_.reads.fetch_add(1);
  if (result > 0) counters_.bytes_read.fetch_add(static_cast<uint64_t>(result));
  return result;
}

int64_t AgentService::Write(const Handshaken& who, const IoBody& io,
                            const uint8_t* data) {
  bool repeated = false;
  const int64_t result = write_log_.ApplyOnce(
      who.client_id, io.seq,
      [&]() -> int64_t {
        const int64_t n = store_->Write(io.path, io.offset, data, io.length);
        if (n <= 0 || who.deferred_sync) return n;
        // Not durable: no byte counts as written (the daemon falls back).
        const int synced = SyncStore(io.path);
        return synced < 0 ? synced : n;
      },
      &repeated);
  if (repeated) {
    counters_.writes_deduplicated.fetch_add(1);
  } else {
    counters_.writes.fetch_add(1);
    if (result > 0) {
      counters_.bytes_written.fetch_add(static_cast<uint64_t>(result));
    }
  }
  return result;
}

int AgentService::SyncStore(const std::string& path) {
  const int rc = store_->Sync(path);
  counters_.syncs.fetch_add(1);
  if (rc < 0) counters_.sync_errors.fetch_add(1);
  return rc;
}

int64_t AgentService::Sync(const IoBody& io) { return SyncStore(io.path); }

}  // namespace fgds::remote
