// Fuzzes the agent protocol's decoders (backend/remote/agent_wire.h): what
// `fgds agent` parses from any peer before and after the key is proven, and
// what a daemon parses from an agent. Input: a frame header (32 bytes),
// then its payload. Beyond not crashing, whatever is accepted must satisfy
// what the server and the client rely on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "backend/remote/agent_wire.h"

using namespace fgds::remote;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kFrameHeaderSize) return 0;
  FrameHeader header;
  if (DecodeHeader(data, &header) != 0) return 0;
  if (header.payload_len > kMaxPayloadBytes) abort();
  const std::span<const uint8_t> payload(data + kFrameHeaderSize,
                                         size - kFrameHeaderSize);
  switch (header.type) {
    case FrameType::kHello: {
      HelloBody b;
      if (DecodeHello(payload, &b) == 0 && (b.flags & ~kHelloKnownFlags))
        abort();
      break;
    }
    case FrameType::kChallenge: {
      ChallengeBody b;
      if (DecodeChallenge(payload, &b) == 0 &&
          (b.credits == 0 || b.max_io == 0 || b.max_io > kMaxIoBytes)) {
        abort();
      }
      break;
    }
    case FrameType::kAuth: {
      AuthBody b;
      DecodeAuth(payload, &b);
      break;
    }
    case FrameType::kRead:
    case FrameType::kWrite:
    case FrameType::kSync: {
      IoBody b;
      size_t data_offset = 0;
      if (DecodeIo(header.type, payload, 1 << 16, &b, &data_offset) == 0) {
        // The store opens b.path beneath its root and moves b.length bytes
        // at b.offset; a write's data is exactly b.length bytes.
        if (CheckRelativePath(b.path) != 0 || b.length > (1u << 16)) abort();
        if (b.offset + b.length < b.offset) abort();
        if (data_offset > payload.size()) abort();
        if (header.type == FrameType::kWrite &&
            payload.size() - data_offset != b.length) {
          abort();
        }
        if (header.type != FrameType::kWrite && data_offset != payload.size()) {
          abort();
        }
        if (header.type == FrameType::kSync && b.length != 0) abort();
      }
      break;
    }
    case FrameType::kReply: {
      ReplyBody b;
      size_t data_offset = 0;
      if (DecodeReply(payload, &b, &data_offset) == 0 &&
          (b.result < -4095 || data_offset > payload.size())) {
        abort();
      }
      break;
    }
    case FrameType::kError: {
      ErrorBody b;
      if (DecodeError(payload, &b) == 0) {
        if (b.error <= 0 || b.message.size() > kMaxErrorMessageBytes) abort();
        for (char c : b.message) {
          if (c < 0x20 || c > 0x7e) abort();
        }
      }
      break;
    }
    case FrameType::kWelcome:
      break;
  }
  return 0;
}
