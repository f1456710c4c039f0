// File: backend/remote/agent_handshake.h
//
// The agent protocol's key handshake (agent_auth.h) over any transport:
// HandshakeChannel moves its frames (StreamChannel for TCP here,
// RdmaChannel in rdma_connection.h), RunDaemonHandshake is the daemon's
// side, and AgentService::Handshake (agent/agent_service.h) the agent's.
//
//   daemon                         agent
//   kHello (client id, nonce) -->
//                             <--  kChallenge (agent nonce, agent's proof,
//                                  credits, max_io, flags)
//   [checks the agent's proof]
//   kAuth (daemon's proof)    -->
//                             <--  kWelcome, or kError naming the refusal
//
// Thread safety: a channel is used by one thread at a time.
#ifndef FGDS_BACKEND_REMOTE_AGENT_HANDSHAKE_H_
#define FGDS_BACKEND_REMOTE_AGENT_HANDSHAKE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/remote/agent_key.h"
#include "backend/remote/agent_wire.h"

namespace fgds::remote {

class FrameStream;

// The frame moves of a handshake, on one connection.
class HandshakeChannel {
 public:
  virtual ~HandshakeChannel() = default;
  // One whole frame of at most max_payload bytes: 0 or -errno.
  virtual int Receive(FrameHeader* header, std::vector<uint8_t>* payload,
                      uint32_t max_payload, int timeout_ms) = 0;
  // 0 or -errno.
  virtual int Send(FrameType type, std::span<const uint8_t> payload,
                   int timeout_ms) = 0;
  // A kError frame naming the problem (best effort: the peer may be gone).
  virtual void SendError(int err, const std::string& message) = 0;
  virtual const std::string& peer() const = 0;
  // What the transport knows of its last failure ("" if nothing more).
  virtual std::string Detail() const { return {}; }
};

// HandshakeChannel over a TCP connection's FrameStream.
class StreamChannel : public HandshakeChannel {
 public:
  StreamChannel(FrameStream& stream, std::string peer)
      : stream_(stream), peer_(std::move(peer)) {}
  int Receive(FrameHeader* header, std::vector<uint8_t>* payload,
              uint32_t max_payload, int timeout_ms) override;
  int Send(FrameType type, std::span<const uint8_t> payload,
           int timeout_ms) override;
  void SendError(int err, const std::string& message) override;
  const std::string& peer() const override { return peer_; }

 private:
  FrameStream& stream_;
  const std::string peer_;
};

// The daemon's side: sends the hello, checks the agent's proof before
// sending its own (a daemon never proves the key to a server that has not),
// waits for the welcome. want_flags are the hello's (kHelloWantChecked,
// kHelloDeferSync); an agent that does not grant kHelloWantChecked when
// asked is refused, the others are the agent's to grant (challenge->flags
// says). 0 and the agent's challenge (credits, max_io, flags, instance),
// or -errno and *why: EACCES when the agent does not hold
// the key, the agent's own errno when it refused us (kError), EPROTO for a
// broken exchange.
int RunDaemonHandshake(HandshakeChannel& channel, const AgentKey& key,
                       uint64_t client_id, uint32_t want_flags, int timeout_ms,
                       ChallengeBody* challenge, std::string* why);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_HANDSHAKE_H_
