// ParseRequest: each malformation is rejected, each well-formed type taken.
#include "fusefs/session/wire_parse.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "fgds/usrbio.h"
#include "fusefs/session/gpu_iov_test_message.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

template <typename Payload>
std::vector<unsigned char> Message(uint16_t type, const Payload& payload) {
  fgds_msg_header h = {};
  h.magic = FGDS_WIRE_MAGIC;
  h.version = FGDS_WIRE_VERSION;
  h.type = type;
  h.length = sizeof(h) + sizeof(payload);
  h.seq = 5;
  std::vector<unsigned char> out(h.length);
  memcpy(out.data(), &h, sizeof(h));
  memcpy(out.data() + sizeof(h), &payload, sizeof(payload));
  return out;
}

int Parse(const std::vector<unsigned char>& m, int nfds) {
  Request r;
  return ParseRequest(m.data(), m.size(), nfds, &r);
}

TEST(WireParseTest, WellFormedRequestsParse) {
  Request r;
  fgds_msg_ior_register ior = {};
  ior.entries = 64;
  ior.io_depth = 8;
  auto m = Message(FGDS_MSG_IOR_REGISTER, ior);
  ASSERT_EQ(ParseRequest(m.data(), m.size(), 3, &r), 0);
  EXPECT_EQ(r.header.seq, 5u);
  EXPECT_EQ(r.ior_register.entries, 64u);
  EXPECT_EQ(r.ior_register.io_depth, 8u);
  EXPECT_EQ(Parse(Message(FGDS_MSG_HELLO, fgds_msg_hello{}), 0), 0);
  EXPECT_EQ(Parse(Message(FGDS_MSG_IOV_REGISTER, fgds_msg_iov_register{}), 1),
            0);
  EXPECT_EQ(Parse(Message(FGDS_MSG_FD_REGISTER, fgds_msg_fd_register{}), 1), 0);
  for (uint16_t t : {FGDS_MSG_IOV_UNREGISTER, FGDS_MSG_IOR_UNREGISTER,
                     FGDS_MSG_FD_UNREGISTER}) {
    EXPECT_EQ(Parse(Message(t, fgds_msg_unregister{}), 0), 0) << t;
  }
}

TEST(WireParseTest, MalformedMessagesAreRejected) {
  const auto good = Message(FGDS_MSG_IOV_REGISTER, fgds_msg_iov_register{});
  auto with = [&](size_t offset, uint32_t value, size_t width) {
    auto m = good;
    memcpy(m.data() + offset, &value, width);
    return m;
  };
  EXPECT_EQ(Parse(with(0, 0xdeadbeef, 4), 1), -EPROTO) << "magic";
  EXPECT_EQ(Parse(with(4, 2, 2), 1), -EPROTO) << "version";
  EXPECT_EQ(Parse(with(6, 77, 2), 1), -EPROTO) << "unknown type";
  EXPECT_EQ(Parse(with(6, FGDS_MSG_REPLY, 2), 1), -EPROTO) << "reply type";
  EXPECT_EQ(Parse(with(8, 31, 4), 1), -EPROTO) << "length field";
  EXPECT_EQ(Parse(with(16 + 8, 1, 4), 1), -EPROTO) << "flags";
  EXPECT_EQ(Parse(with(16 + 12, 1, 4), 1), -EPROTO) << "reserved";
  EXPECT_EQ(Parse(good, 0), -EPROTO) << "missing fd";
  EXPECT_EQ(Parse(good, 2), -EPROTO) << "extra fd";
  auto shorter = good;
  shorter.resize(good.size() - 1);
  EXPECT_EQ(Parse(shorter, 1), -EPROTO) << "short";
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(Parse(longer, 1), -EPROTO) << "long";
  Request r;
  EXPECT_EQ(ParseRequest(good.data(), 3, 1, &r), -EPROTO) << "no header";
  std::vector<unsigned char> huge(FGDS_WIRE_MAX_MESSAGE + 1);
  EXPECT_EQ(ParseRequest(huge.data(), huge.size(), 0, &r), -EPROTO);

  fgds_msg_hello hello = {};
  hello.reserved[2] = 1;
  EXPECT_EQ(Parse(Message(FGDS_MSG_HELLO, hello), 0), -EPROTO);
  fgds_msg_ior_register ior = {};
  ior.flags = 0x100;
  EXPECT_EQ(Parse(Message(FGDS_MSG_IOR_REGISTER, ior), 3), -EPROTO);
  ior = {};
  ior.reserved = 1;
  EXPECT_EQ(Parse(Message(FGDS_MSG_IOR_REGISTER, ior), 3), -EPROTO);
  fgds_msg_unregister un = {};
  un.reserved = 9;
  EXPECT_EQ(Parse(Message(FGDS_MSG_FD_UNREGISTER, un), 0), -EPROTO);
  fgds_msg_fd_register fdr = {};
  fdr.flags = 1;
  EXPECT_EQ(Parse(Message(FGDS_MSG_FD_REGISTER, fdr), 1), -EPROTO);
}

TEST(WireParseTest, GpuIovRegisterParses) {
  Request r;
  const auto m = Message(FGDS_MSG_GPU_IOV_REGISTER, ValidGpuIovRegister());
  ASSERT_EQ(ParseRequest(m.data(), m.size(), 1, &r), 0);
  EXPECT_EQ(r.gpu_iov_register.size, 1u << 20);
  EXPECT_EQ(r.gpu_iov_register.dmabuf_offset, 4096u);
  EXPECT_EQ(r.gpu_iov_register.dmabuf_size, 2u << 20);
  EXPECT_STREQ(r.gpu_iov_register.pci_bus_id, "0000:3B:00.0");
  // Values are the handler's to judge: an empty id or a zero size parse.
  fgds_msg_gpu_iov_register empty = {};
  EXPECT_EQ(Parse(Message(FGDS_MSG_GPU_IOV_REGISTER, empty), 1), 0);
  // 15 characters and the NUL fill the field exactly.
  fgds_msg_gpu_iov_register full = ValidGpuIovRegister();
  memset(full.pci_bus_id, 'a', sizeof(full.pci_bus_id) - 1);
  full.pci_bus_id[sizeof(full.pci_bus_id) - 1] = '\0';
  EXPECT_EQ(Parse(Message(FGDS_MSG_GPU_IOV_REGISTER, full), 1), 0);
}

TEST(WireParseTest, IovGpuStagingParsesAndMalformedOnesAreRejected) {
  const uint16_t type = FGDS_MSG_IOV_GPU_STAGING;
  fgds_msg_iov_gpu_staging t = {};
  t.iov_id = 3;
  std::strcpy(t.pci_bus_id, "0000:3B:00.0");
  Request r;
  const auto m = Message(type, t);
  ASSERT_EQ(ParseRequest(m.data(), m.size(), 0, &r), 0);
  EXPECT_EQ(r.iov_gpu_staging.iov_id, 3u);
  EXPECT_STREQ(r.iov_gpu_staging.pci_bus_id, "0000:3B:00.0");
  EXPECT_EQ(Parse(Message(type, t), 1), -EPROTO) << "an fd";
  auto bad = t;
  bad.flags = 1;
  EXPECT_EQ(Parse(Message(type, bad), 0), -EPROTO) << "flags";
  bad = t;
  bad.reserved = 1;
  EXPECT_EQ(Parse(Message(type, bad), 0), -EPROTO) << "reserved";
  bad = t;
  memset(bad.pci_bus_id, 'f', sizeof(bad.pci_bus_id));
  EXPECT_EQ(Parse(Message(type, bad), 0), -EPROTO) << "unterminated pci id";
  EXPECT_EQ(Parse(Message(type, fgds_msg_unregister{}), 0), -EPROTO) << "short";
}

TEST(WireParseTest, MalformedGpuIovRegisterIsRejected) {
  const uint16_t type = FGDS_MSG_GPU_IOV_REGISTER;
  EXPECT_EQ(Parse(Message(type, ValidGpuIovRegister()), 0), -EPROTO)
      << "missing fd";
  EXPECT_EQ(Parse(Message(type, ValidGpuIovRegister()), 2), -EPROTO)
      << "extra fd";
  auto g = ValidGpuIovRegister();
  g.flags = 1;
  EXPECT_EQ(Parse(Message(type, g), 1), -EPROTO) << "flags";
  g = ValidGpuIovRegister();
  g.reserved0 = 1;
  EXPECT_EQ(Parse(Message(type, g), 1), -EPROTO) << "reserved0";
  for (int i = 0; i < 2; ++i) {
    g = ValidGpuIovRegister();
    g.reserved[i] = uint64_t{1} << 63;
    EXPECT_EQ(Parse(Message(type, g), 1), -EPROTO) << "reserved " << i;
  }
  g = ValidGpuIovRegister();
  memset(g.pci_bus_id, 'f', sizeof(g.pci_bus_id));
  EXPECT_EQ(Parse(Message(type, g), 1), -EPROTO) << "unterminated pci id";
  g = ValidGpuIovRegister();
  g.pci_bus_id[14] = 'x';  // after the NUL that ends "0000:3B:00.0"
  EXPECT_EQ(Parse(Message(type, g), 1), -EPROTO) << "bytes after the NUL";
  // The payload of a plain IOV_REGISTER under this type: too short.
  EXPECT_EQ(Parse(Message(type, fgds_msg_iov_register{}), 1), -EPROTO);
}

}  // namespace
}  // namespace fgds::session
