#include "backend/remote/agent_wire.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

std::vector<uint8_t> Header(const FrameHeader& h) {
  std::vector<uint8_t> out(kFrameHeaderSize);
  EncodeHeader(h, out.data());
  return out;
}

TEST(AgentWireTest, HeaderRoundTrips) {
  FrameHeader h;
  h.type = FrameType::kWrite;
  h.flags = kFrameChecked;
  h.payload_len = 12345;
  h.payload_crc = 0xdeadbeef;
  h.request_id = 0x0102030405060708ull;
  std::vector<uint8_t> bytes = Header(h);
  FrameHeader back;
  ASSERT_EQ(DecodeHeader(bytes.data(), &back), 0);
  EXPECT_EQ(back.type, h.type);
  EXPECT_EQ(back.flags, h.flags);
  EXPECT_EQ(back.payload_len, h.payload_len);
  EXPECT_EQ(back.payload_crc, h.payload_crc);
  EXPECT_EQ(back.request_id, h.request_id);
}

// Each malformed header is refused with its own errno (one test per
// rejection, as botching-up-ioctls.rst asks of an ABI).
TEST(AgentWireTest, HeaderRejections) {
  FrameHeader good;
  good.type = FrameType::kRead;
  good.payload_len = 10;
  struct Case {
    const char* name;
    size_t offset;
    uint8_t value;
    int error;
  } cases[] = {
      {"magic", 0, 0x00, -EPROTO},
      {"version", 4, 0x02, -EPROTONOSUPPORT},
      {"type zero", 6, 0x00, -EPROTO},
      {"type unknown", 6, 0x0a, -EPROTO},
      {"unknown flag", 8, 0x02, -EPROTO},
      {"reserved16", 10, 0x01, -EPROTO},
      {"crc without flag", 16, 0x01, -EPROTO},
      {"reserved32", 20, 0x01, -EPROTO},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes = Header(good);
    bytes[c.offset] = c.value;
    FrameHeader out;
    EXPECT_EQ(DecodeHeader(bytes.data(), &out), c.error) << c.name;
  }
  FrameHeader big = good;
  big.payload_len = kMaxPayloadBytes + 1;
  std::vector<uint8_t> bytes = Header(big);
  FrameHeader out;
  EXPECT_EQ(DecodeHeader(bytes.data(), &out), -EMSGSIZE);
}

TEST(AgentWireTest, HandshakeBodiesRoundTrip) {
  HelloBody hello;
  hello.flags = kHelloWantChecked;
  hello.client_id = 77;
  hello.client_nonce.fill(3);
  std::vector<uint8_t> p;
  EncodeHello(hello, &p);
  HelloBody hello_back;
  ASSERT_EQ(DecodeHello(p, &hello_back), 0);
  EXPECT_EQ(hello_back.client_id, 77u);
  EXPECT_EQ(hello_back.client_nonce, hello.client_nonce);
  EXPECT_EQ(hello_back.flags, kHelloWantChecked);
  p.push_back(0);
  EXPECT_EQ(DecodeHello(p, &hello_back), -EPROTO) << "trailing byte";

  ChallengeBody ch;
  ch.agent_nonce.fill(1);
  ch.agent_proof.fill(2);
  ch.credits = 16;
  ch.max_io = 1 << 20;
  p.clear();
  EncodeChallenge(ch, &p);
  ChallengeBody ch_back;
  ASSERT_EQ(DecodeChallenge(p, &ch_back), 0);
  EXPECT_EQ(ch_back.credits, 16u);
  EXPECT_EQ(ch_back.max_io, 1u << 20);
  ch.max_io = kMaxIoBytes + 1;
  p.clear();
  EncodeChallenge(ch, &p);
  EXPECT_EQ(DecodeChallenge(p, &ch_back), -EPROTO) << "max_io over the limit";
  ch.max_io = 1;
  ch.credits = 0;
  p.clear();
  EncodeChallenge(ch, &p);
  EXPECT_EQ(DecodeChallenge(p, &ch_back), -EPROTO) << "no credits";
  ch.credits = 1;
  ch.instance = 0xdeadbeef;
  ch.flags = kHelloDeferSync;
  p.clear();
  EncodeChallenge(ch, &p);
  ASSERT_EQ(DecodeChallenge(p, &ch_back), 0);
  EXPECT_EQ(ch_back.instance, 0xdeadbeefu);
  EXPECT_EQ(ch_back.flags, kHelloDeferSync);
  ch.flags = 4;
  p.clear();
  EncodeChallenge(ch, &p);
  EXPECT_EQ(DecodeChallenge(p, &ch_back), -EPROTO) << "unknown flag";
  hello.flags = 4;
  p.clear();
  EncodeHello(hello, &p);
  EXPECT_EQ(DecodeHello(p, &hello_back), -EPROTO) << "unknown hello flag";
}

TEST(AgentWireTest, ASyncNamesAFileAndNothingElse) {
  IoBody io;
  io.path = "dir/file";
  std::vector<uint8_t> p;
  EncodeIo(io, &p);
  IoBody back;
  size_t data_offset = 0;
  ASSERT_EQ(DecodeIo(FrameType::kSync, p, kMaxIoBytes, &back, &data_offset), 0);
  EXPECT_EQ(back.path, "dir/file");
  std::vector<uint8_t> extra = p;
  extra.push_back(0);
  EXPECT_EQ(DecodeIo(FrameType::kSync, extra, kMaxIoBytes, &back, &data_offset),
            -EPROTO);
  io.length = 1;
  p.clear();
  EncodeIo(io, &p);
  EXPECT_EQ(DecodeIo(FrameType::kSync, p, kMaxIoBytes, &back, &data_offset),
            -EPROTO)
      << "a sync has no length";
}

TEST(AgentWireTest, IoBodyRoundTripsWithWriteData) {
  IoBody io;
  io.seq = 9;
  io.offset = 1ull << 40;
  io.length = 5;
  io.data_crc = 0x12345678;
  io.path = "dir/file";
  std::vector<uint8_t> p;
  EncodeIo(io, &p);
  const std::vector<uint8_t> data = {'h', 'e', 'l', 'l', 'o'};
  std::vector<uint8_t> write = p;
  write.insert(write.end(), data.begin(), data.end());
  IoBody back;
  size_t data_offset = 0;
  ASSERT_EQ(
      DecodeIo(FrameType::kWrite, write, kMaxIoBytes, &back, &data_offset), 0);
  EXPECT_EQ(back.seq, 9u);
  EXPECT_EQ(back.offset, 1ull << 40);
  EXPECT_EQ(back.path, "dir/file");
  EXPECT_EQ(back.data_crc, 0x12345678u);
  EXPECT_EQ(std::memcmp(write.data() + data_offset, "hello", 5), 0);
  // A read carries no data; a write exactly `length` bytes.
  EXPECT_EQ(DecodeIo(FrameType::kRead, p, kMaxIoBytes, &back, &data_offset), 0);
  EXPECT_EQ(DecodeIo(FrameType::kRead, write, kMaxIoBytes, &back, &data_offset),
            -EPROTO);
  write.pop_back();
  EXPECT_EQ(
      DecodeIo(FrameType::kWrite, write, kMaxIoBytes, &back, &data_offset),
      -EPROTO);
  EXPECT_EQ(DecodeIo(FrameType::kRead, p, 4, &back, &data_offset), -EMSGSIZE);
  EXPECT_EQ(DecodeIo(FrameType::kReply, p, kMaxIoBytes, &back, &data_offset),
            -EPROTO);
}

TEST(AgentWireTest, IoBodyRejectsOverflowingRangesAndTruncatedPaths) {
  IoBody io;
  io.offset = UINT64_MAX - 2;
  io.length = 4;
  io.path = "f";
  std::vector<uint8_t> p;
  EncodeIo(io, &p);
  IoBody back;
  size_t data_offset;
  EXPECT_EQ(DecodeIo(FrameType::kRead, p, kMaxIoBytes, &back, &data_offset),
            -EOVERFLOW);
  io.offset = 0;
  io.path = "abcdef";
  p.clear();
  EncodeIo(io, &p);
  p.resize(p.size() - 3);  // the path is cut short
  EXPECT_EQ(DecodeIo(FrameType::kRead, p, kMaxIoBytes, &back, &data_offset),
            -EPROTO);
}

TEST(AgentWireTest, PathsThatCouldLeaveTheRootAreRefused) {
  for (const char* ok :
       {"a", "a/b", "a.b/..c", "...", "ckpt/shard-0.safetensors"}) {
    EXPECT_EQ(CheckRelativePath(ok), 0) << ok;
  }
  for (const char* bad : {"", "/etc/passwd", "..", "../x", "a/../../x", "a/./b",
                          ".", "a//b", "a/", "a/.."}) {
    EXPECT_EQ(CheckRelativePath(bad), -EINVAL) << bad;
  }
  EXPECT_EQ(CheckRelativePath(std::string_view("a\0b", 3)), -EINVAL);
  EXPECT_EQ(CheckRelativePath(std::string(kMaxPathBytes + 1, 'a')), -EINVAL);
}

TEST(AgentWireTest, ReplyAndErrorBodies) {
  std::vector<uint8_t> p;
  EncodeReply({-ENOENT}, &p);
  ReplyBody reply;
  size_t data_offset;
  ASSERT_EQ(DecodeReply(p, &reply, &data_offset), 0);
  EXPECT_EQ(reply.result, -ENOENT);
  p.clear();
  EncodeReply({-5000}, &p);
  EXPECT_EQ(DecodeReply(p, &reply, &data_offset), -EPROTO) << "not an errno";
  p.clear();
  EncodeReply({7, 0xabcdef01}, &p);
  ASSERT_EQ(DecodeReply(p, &reply, &data_offset), 0);
  EXPECT_EQ(reply.data_crc, 0xabcdef01u);
  p[12] = 1;  // the reserved word after the CRC
  EXPECT_EQ(DecodeReply(p, &reply, &data_offset), -EPROTO);

  p.clear();
  EncodeError({EACCES, "wrong key\x01"}, &p);
  ErrorBody error;
  ASSERT_EQ(DecodeError(p, &error), 0);
  EXPECT_EQ(error.error, EACCES);
  EXPECT_EQ(error.message, "wrong key?") << "control bytes are not printed";
  p.clear();
  EncodeError({0, "x"}, &p);
  EXPECT_EQ(DecodeError(p, &error), -EPROTO) << "errno 0";
}

}  // namespace
}  // namespace fgds::remote
