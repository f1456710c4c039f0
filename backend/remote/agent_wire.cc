#include "backend/remote/agent_wire.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace fgds::remote {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the agent protocol is little-endian; add byte swaps first");

// Payload sizes of the fixed parts.
constexpr size_t kHelloSize = 48;
constexpr size_t kChallengeSize = 80;
constexpr size_t kAuthSize = 32;
constexpr size_t kIoFixedSize = 40;
constexpr size_t kReplyFixedSize = 16;
constexpr size_t kErrorFixedSize = 8;

template <typename T>
void Put(std::vector<uint8_t>* out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->insert(out->end(), bytes, bytes + sizeof(T));
}

template <size_t N>
void PutBytes(std::vector<uint8_t>* out, const std::array<uint8_t, N>& a) {
  out->insert(out->end(), a.begin(), a.end());
}

// Reads fixed fields in order from a payload whose size was checked.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  template <size_t N>
  void GetBytes(std::array<uint8_t, N>* a) {
    std::memcpy(a->data(), bytes_.data() + pos_, N);
    pos_ += N;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

bool KnownType(uint16_t type) {
  return type >= static_cast<uint16_t>(FrameType::kHello) &&
         type <= static_cast<uint16_t>(FrameType::kSync);
}

}  // namespace

void EncodeHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]) {
  std::vector<uint8_t> v;
  v.reserve(kFrameHeaderSize);
  Put<uint32_t>(&v, kAgentMagic);
  Put<uint16_t>(&v, kAgentProtocolVersion);
  Put<uint16_t>(&v, static_cast<uint16_t>(header.type));
  Put<uint16_t>(&v, header.flags);
  Put<uint16_t>(&v, 0);
  Put<uint32_t>(&v, header.payload_len);
  Put<uint32_t>(&v, header.payload_crc);
  Put<uint32_t>(&v, 0);
  Put<uint64_t>(&v, header.request_id);
  std::memcpy(out, v.data(), kFrameHeaderSize);
}

int DecodeHeader(const uint8_t bytes[kFrameHeaderSize], FrameHeader* out) {
  Reader r(std::span<const uint8_t>(bytes, kFrameHeaderSize));
  if (r.Get<uint32_t>() != kAgentMagic) return -EPROTO;
  if (r.Get<uint16_t>() != kAgentProtocolVersion) return -EPROTONOSUPPORT;
  const uint16_t type = r.Get<uint16_t>();
  const uint16_t flags = r.Get<uint16_t>();
  const uint16_t reserved16 = r.Get<uint16_t>();
  const uint32_t payload_len = r.Get<uint32_t>();
  const uint32_t payload_crc = r.Get<uint32_t>();
  const uint32_t reserved32 = r.Get<uint32_t>();
  const uint64_t request_id = r.Get<uint64_t>();
  if (!KnownType(type) || (flags & ~kFrameChecked) != 0 || reserved16 != 0 ||
      reserved32 != 0) {
    return -EPROTO;
  }
  if (payload_len > kMaxPayloadBytes) return -EMSGSIZE;
  if ((flags & kFrameChecked) == 0 && payload_crc != 0) return -EPROTO;
  out->type = static_cast<FrameType>(type);
  out->flags = flags;
  out->payload_len = payload_len;
  out->payload_crc = payload_crc;
  out->request_id = request_id;
  return 0;
}

void EncodeHello(const HelloBody& body, std::vector<uint8_t>* out) {
  Put<uint32_t>(out, body.flags);
  Put<uint32_t>(out, 0);
  Put<uint64_t>(out, body.client_id);
  PutBytes(out, body.client_nonce);
}

int DecodeHello(std::span<const uint8_t> payload, HelloBody* out) {
  if (payload.size() != kHelloSize) return -EPROTO;
  Reader r(payload);
  out->flags = r.Get<uint32_t>();
  if (r.Get<uint32_t>() != 0 || (out->flags & ~kHelloKnownFlags) != 0) {
    return -EPROTO;
  }
  out->client_id = r.Get<uint64_t>();
  r.GetBytes(&out->client_nonce);
  return 0;
}

void EncodeChallenge(const ChallengeBody& body, std::vector<uint8_t>* out) {
  PutBytes(out, body.agent_nonce);
  PutBytes(out, body.agent_proof);
  Put<uint32_t>(out, body.credits);
  Put<uint32_t>(out, body.max_io);
  Put<uint32_t>(out, body.flags);
  Put<uint32_t>(out, body.instance);
}

int DecodeChallenge(std::span<const uint8_t> payload, ChallengeBody* out) {
  if (payload.size() != kChallengeSize) return -EPROTO;
  Reader r(payload);
  r.GetBytes(&out->agent_nonce);
  r.GetBytes(&out->agent_proof);
  out->credits = r.Get<uint32_t>();
  out->max_io = r.Get<uint32_t>();
  out->flags = r.Get<uint32_t>();
  out->instance = r.Get<uint32_t>();
  if ((out->flags & ~kHelloKnownFlags) != 0) return -EPROTO;
  if (out->credits == 0 || out->max_io == 0 || out->max_io > kMaxIoBytes) {
    return -EPROTO;
  }
  return 0;
}

void EncodeAuth(const AuthBody& body, std::vector<uint8_t>* out) {
  PutBytes(out, body.client_proof);
}

int DecodeAuth(std::span<const uint8_t> payload, AuthBody* out) {
  if (payload.size() != kAuthSize) return -EPROTO;
  Reader r(payload);
  r.GetBytes(&out->client_proof);
  return 0;
}

void EncodeIo(const IoBody& body, std::vector<uint8_t>* out) {
  Put<uint64_t>(out, body.seq);
  Put<uint64_t>(out, body.offset);
  Put<uint64_t>(out, body.remote_addr);
  Put<uint32_t>(out, body.length);
  Put<uint32_t>(out, body.rkey);
  Put<uint16_t>(out, static_cast<uint16_t>(body.path.size()));
  Put<uint16_t>(out, 0);
  Put<uint32_t>(out, body.data_crc);
  out->insert(out->end(), body.path.begin(), body.path.end());
}

int DecodeIo(FrameType type, std::span<const uint8_t> payload, uint32_t max_io,
             IoBody* out, size_t* data_offset) {
  if (type != FrameType::kRead && type != FrameType::kWrite &&
      type != FrameType::kSync) {
    return -EPROTO;
  }
  if (payload.size() < kIoFixedSize) return -EPROTO;
  Reader r(payload);
  out->seq = r.Get<uint64_t>();
  out->offset = r.Get<uint64_t>();
  out->remote_addr = r.Get<uint64_t>();
  out->length = r.Get<uint32_t>();
  out->rkey = r.Get<uint32_t>();
  const uint16_t path_len = r.Get<uint16_t>();
  if (r.Get<uint16_t>() != 0) return -EPROTO;
  out->data_crc = r.Get<uint32_t>();
  if (out->length > max_io) return -EMSGSIZE;
  if (type == FrameType::kSync && out->length != 0) return -EPROTO;
  // offset + length must fit in off_t for the store's pread/pwrite.
  if (out->offset > static_cast<uint64_t>(INT64_MAX) - out->length) {
    return -EOVERFLOW;
  }
  if (payload.size() - kIoFixedSize < path_len) return -EPROTO;
  out->path.assign(reinterpret_cast<const char*>(payload.data()) + kIoFixedSize,
                   path_len);
  if (int rc = CheckRelativePath(out->path); rc != 0) return rc;
  const size_t rest = payload.size() - kIoFixedSize - path_len;
  if (type == FrameType::kWrite ? rest != out->length : rest != 0) {
    return -EPROTO;
  }
  *data_offset = kIoFixedSize + path_len;
  return 0;
}

void EncodeReply(const ReplyBody& body, std::vector<uint8_t>* out) {
  Put<int64_t>(out, body.result);
  Put<uint32_t>(out, body.data_crc);
  Put<uint32_t>(out, 0);
}

int DecodeReply(std::span<const uint8_t> payload, ReplyBody* out,
                size_t* data_offset) {
  if (payload.size() < kReplyFixedSize) return -EPROTO;
  Reader r(payload);
  out->result = r.Get<int64_t>();
  out->data_crc = r.Get<uint32_t>();
  if (r.Get<uint32_t>() != 0) return -EPROTO;
  if (out->result < -4095) return -EPROTO;  // not an errno
  *data_offset = kReplyFixedSize;
  return 0;
}

void EncodeError(const ErrorBody& body, std::vector<uint8_t>* out) {
  const size_t n = std::min(body.message.size(), kMaxErrorMessageBytes);
  Put<int32_t>(out, body.error);
  Put<uint16_t>(out, static_cast<uint16_t>(n));
  Put<uint16_t>(out, 0);
  out->insert(out->end(), body.message.begin(), body.message.begin() + n);
}

int DecodeError(std::span<const uint8_t> payload, ErrorBody* out) {
  if (payload.size() < kErrorFixedSize) return -EPROTO;
  Reader r(payload);
  out->error = r.Get<int32_t>();
  const uint16_t n = r.Get<uint16_t>();
  if (r.Get<uint16_t>() != 0) return -EPROTO;
  if (out->error <= 0 || out->error > 4095) return -EPROTO;
  if (n > kMaxErrorMessageBytes || payload.size() != kErrorFixedSize + n) {
    return -EPROTO;
  }
  out->message.assign(
      reinterpret_cast<const char*>(payload.data()) + kErrorFixedSize, n);
  // The message is printed: keep it to printable ASCII.
  for (char& c : out->message) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return 0;
}

int CheckRelativePath(std::string_view path) {
  if (path.empty() || path.size() > kMaxPathBytes) return -EINVAL;
  if (path.front() == '/') return -EINVAL;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return -EINVAL;
    if (part.find('\0') != std::string_view::npos) return -EINVAL;
    start = end + 1;
  }
  return 0;
}

}  // namespace fgds::remote
