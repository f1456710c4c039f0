// File: backend/remote/agent_wire.h
//
// The agent protocol's frames: what a daemon and `fgds agent` exchange over
// one connection (TCP today; an RDMA queue pair's SEND/RECV carries the same
// frames). A frame is a 32-byte header and a payload; every multi-byte field
// is little-endian and every reserved field must be zero (a receiver
// refuses a frame otherwise, so fields can be given meaning later).
//
//   daemon -> agent  kHello      HelloBody
//   agent  -> daemon kChallenge  ChallengeBody (the agent's proof first)
//   daemon -> agent  kAuth       AuthBody
//   agent  -> daemon kWelcome    (empty)          or kError, then close
//   daemon -> agent  kRead       IoBody                 -> kReply + data
//   daemon -> agent  kWrite      IoBody + data          -> kReply
//   daemon -> agent  kSync       IoBody (path only)     -> kReply
//   either           kError      ErrorBody (then the sender closes)
//
// A reply carries the request's request_id. With kFrameChecked in the
// header, payload_crc is the CRC-32C of the payload (crc32c.h), and the
// receiver refuses the frame (EBADMSG) if it does not match.
//
// Decode* functions take bytes from the peer, who is untrusted until the
// handshake ends (and a buggy peer after it): each checks every length
// against the buffer and the limits below and returns 0 or -errno (EPROTO
// for a malformed frame, EMSGSIZE for one over a limit). tests/fuzz/
// agent_wire_fuzz.cc fuzzes them.
#ifndef FGDS_BACKEND_REMOTE_AGENT_WIRE_H_
#define FGDS_BACKEND_REMOTE_AGENT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/remote/agent_auth.h"

namespace fgds::remote {

inline constexpr uint32_t kAgentMagic = 0x41444746;  // "FGDA"
inline constexpr uint16_t kAgentProtocolVersion = 1;
inline constexpr size_t kFrameHeaderSize = 32;
// The most file data one request moves; larger I/O is split by the client.
inline constexpr uint32_t kMaxIoBytes = 8u << 20;
inline constexpr size_t kMaxPathBytes = 4095;
inline constexpr size_t kMaxErrorMessageBytes = 1024;
// Room for the largest frame: an IoBody with the longest path and data.
inline constexpr uint32_t kMaxPayloadBytes = 64 + kMaxPathBytes + kMaxIoBytes;

enum class FrameType : uint16_t {
  kHello = 1,
  kChallenge = 2,
  kAuth = 3,
  kWelcome = 4,
  kRead = 5,
  kWrite = 6,
  kReply = 7,
  kError = 8,
  // Makes the writes the agent acknowledged for a file durable (the
  // daemon's fsync, fdatasync and close): needed only on connections that
  // negotiated kHelloDeferSync.
  kSync = 9,
};

// Header flags.
inline constexpr uint16_t kFrameChecked = 1;  // payload_crc is set

struct FrameHeader {
  FrameType type = FrameType::kError;
  uint16_t flags = 0;
  uint32_t payload_len = 0;
  uint32_t payload_crc = 0;
  uint64_t request_id = 0;
};

// Hello flags: what the daemon asks for; the challenge's flags say what
// the agent granted.
inline constexpr uint32_t kHelloWantChecked = 1;  // CRC every payload
// Writes are acknowledged once the store took them, not synced one by one;
// the daemon sends kSync for a file when its caller needs durability.
// Without it the agent syncs every write before its reply.
inline constexpr uint32_t kHelloDeferSync = 2;
inline constexpr uint32_t kHelloKnownFlags =
    kHelloWantChecked | kHelloDeferSync;

struct HelloBody {
  uint32_t flags = 0;
  uint64_t client_id = 0;  // random per daemon start; keys write dedup
  Nonce client_nonce{};
};

struct ChallengeBody {
  Nonce agent_nonce{};
  Proof agent_proof{};
  uint32_t credits = 0;  // requests the daemon may have outstanding
  uint32_t max_io = 0;   // the largest IoBody.length the agent accepts
  uint32_t flags = 0;    // the hello's flags the agent granted
  // Random per agent process (never 0 from a real agent): a daemon whose
  // reconnection finds another instance knows the agent restarted and lost
  // the writes it had acknowledged but not synced.
  uint32_t instance = 0;
};

struct AuthBody {
  Proof client_proof{};
};

// A read or write of `length` bytes at `offset` of the file `path`
// (relative to the agent's root; never absolute, never leaving it). `seq`
// increases per daemon (client_id) for writes, so that a write retried on
// a new connection is applied once. remote_addr and rkey name the
// daemon's memory region for RDMA transports and are 0 over TCP, where the
// data travels in the frame.
//
// data_crc (and ReplyBody's): over RDMA, on a connection with checked
// payloads, the CRC-32C of the data, which travels in no frame: a write's
// data as the daemon has it (the agent checks what its RDMA READ got), a
// read's as the agent RDMA-WROTE it (the daemon checks what landed). 0
// otherwise, and ignored: over TCP the frame's CRC covers the data.
struct IoBody {
  uint64_t seq = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t data_crc = 0;
  std::string path;
};

// result: bytes moved (a read may be short at end of file), or -errno.
struct ReplyBody {
  int64_t result = 0;
  uint32_t data_crc = 0;  // as IoBody's
};

struct ErrorBody {
  int32_t error = 0;  // a positive errno
  std::string message;
};

// Encoders: append the payload (not the header) to *out.
void EncodeHello(const HelloBody& body, std::vector<uint8_t>* out);
void EncodeChallenge(const ChallengeBody& body, std::vector<uint8_t>* out);
void EncodeAuth(const AuthBody& body, std::vector<uint8_t>* out);
void EncodeIo(const IoBody& body, std::vector<uint8_t>* out);
void EncodeReply(const ReplyBody& body, std::vector<uint8_t>* out);
void EncodeError(const ErrorBody& body, std::vector<uint8_t>* out);
// The 32 header bytes for a payload already encoded.
void EncodeHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]);

int DecodeHeader(const uint8_t bytes[kFrameHeaderSize], FrameHeader* out);
int DecodeHello(std::span<const uint8_t> payload, HelloBody* out);
int DecodeChallenge(std::span<const uint8_t> payload, ChallengeBody* out);
int DecodeAuth(std::span<const uint8_t> payload, AuthBody* out);
// The IoBody part of a kRead, kWrite or kSync payload; *data_offset is
// where a write's data starts in `payload`. For a kWrite the rest of the
// payload must be exactly `length` bytes; a kRead or kSync has nothing
// after the path, and a kSync's length is 0.
// Refuses lengths above `max_io` and malformed paths (relative_path_check).
int DecodeIo(FrameType type, std::span<const uint8_t> payload, uint32_t max_io,
             IoBody* out, size_t* data_offset);
// A kReply's fixed part; *data_offset is where read data starts.
int DecodeReply(std::span<const uint8_t> payload, ReplyBody* out,
                size_t* data_offset);
int DecodeError(std::span<const uint8_t> payload, ErrorBody* out);

// 0 if `path` can name a file under the agent's root: non-empty, at most
// kMaxPathBytes, relative, no NUL, no "." or ".." component, no empty
// component. The store opens it beneath its root regardless (openat2
// RESOLVE_BENEATH); this check gives the clear error early.
int CheckRelativePath(std::string_view path);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_WIRE_H_
