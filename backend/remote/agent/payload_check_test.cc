// End-to-end payload checks and automatic retries over TCP: the real
// client and agent, with a CorruptingProxy between them that flips one
// byte of a payload. With checked payloads a flipped byte is detected on
// the side that receives it, counted, and the request retried once on a
// new connection (a write with its sequence number, applied once); a
// corruption that persists is an errno, never wrong data.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "backend/remote/agent/agent_server.h"
#include "backend/remote/agent/corrupting_proxy.h"
#include "backend/remote/agent_client.h"
#include "backend/remote/agent_pool.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

// Bytes of a connection before its first request or reply: hello (32+48)
// and auth (32+32) towards the agent, challenge (32+80) and welcome (32)
// towards the daemon.
constexpr uint64_t kHandshakeBytes = 144;
// Where data byte k of the first read's reply is in the agent's stream:
// after the reply's header (32) and fixed part (16).
constexpr uint64_t ReplyDataByte(uint64_t k) {
  return kHandshakeBytes + 32 + 16 + k;
}
// Where data byte k of the first write is in the daemon's stream: after
// the header (32), the IoBody's fixed part (40) and the path.
constexpr uint64_t WriteDataByte(uint64_t path_len, uint64_t k) {
  return kHandshakeBytes + 32 + 40 + path_len + k;
}

std::string Pattern(size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 7 + 3);
  return s;
}

class PayloadCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/payload_check_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    key_.secret = std::string(48, 'C');
    AgentServerOptions options;
    options.listen = {"127.0.0.1", 0};
    options.key = key_;
    auto store = DirStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto server = AgentServer::Start(std::move(options), std::move(*store));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto bound = ParseHostPort(server_->address());
    ASSERT_TRUE(bound.ok());
    agent_ = *bound;
  }
  void TearDown() override {
    server_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }

  std::unique_ptr<AgentClient> Connect(const CorruptingProxy& proxy,
                                       bool checked) {
    AgentClientOptions o;
    o.agent = {"127.0.0.1", proxy.port()};
    o.key = key_;
    o.checked = checked;
    o.io_timeout_ms = 5000;
    auto client = AgentClient::Connect(std::move(o));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }
  void MakeFile(const std::string& name, const std::string& data) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << data;
  }
  std::string FileBytes(const std::string& name) {
    std::ifstream f(dir_ + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  std::string dir_;
  AgentKey key_;
  HostPort agent_;
  std::unique_ptr<AgentServer> server_;
};

TEST_F(PayloadCheckTest, ACorruptedReplyIsCaughtCountedAndReadAgain) {
  const std::string data = Pattern(10000);
  MakeFile("f", data);
  CorruptingProxy proxy(agent_, CorruptingProxy::kToDaemon, ReplyDataByte(77),
                        /*corrupt_connections=*/1);
  auto client = Connect(proxy, /*checked=*/true);
  ASSERT_NE(client, nullptr);
  std::string back(data.size(), '\0');
  ASSERT_EQ(client->Read("f", 0, back.data(), back.size()),
            static_cast<int64_t>(data.size()))
      << client->last_error();
  EXPECT_EQ(back, data);
  EXPECT_EQ(proxy.flipped(), 1);
  EXPECT_EQ(client->crc_errors(), 1u);
  EXPECT_EQ(client->retries(), 1u);
  EXPECT_EQ(client->connects(), 2u);
}

TEST_F(PayloadCheckTest, ACorruptionThatPersistsIsAnErrnoNeverData) {
  const std::string data = Pattern(10000);
  MakeFile("f", data);
  CorruptingProxy proxy(agent_, CorruptingProxy::kToDaemon, ReplyDataByte(5),
                        /*corrupt_connections=*/100);
  auto client = Connect(proxy, /*checked=*/true);
  ASSERT_NE(client, nullptr);
  std::string back(data.size(), '\0');
  EXPECT_EQ(client->Read("f", 0, back.data(), back.size()), -EBADMSG);
  EXPECT_NE(client->last_error().find("CRC"), std::string::npos)
      << client->last_error();
  // One retry, not more: bounded.
  EXPECT_EQ(client->retries(), 1u);
  EXPECT_EQ(client->crc_errors(), 2u);
  EXPECT_EQ(proxy.connections(), 2);
}

TEST_F(PayloadCheckTest, ACorruptedWriteIsRefusedByTheAgentAndSentAgainOnce) {
  MakeFile("f", std::string(4096, '.'));
  const std::string data = Pattern(4096);
  CorruptingProxy proxy(agent_, CorruptingProxy::kToAgent,
                        WriteDataByte(1, 100), /*corrupt_connections=*/1);
  auto client = Connect(proxy, /*checked=*/true);
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Write("f", 0, data.data(), data.size()), 4096)
      << client->last_error();
  EXPECT_EQ(FileBytes("f"), data);
  EXPECT_EQ(proxy.flipped(), 1);
  EXPECT_EQ(server_->counters().crc_errors, 1u);
  EXPECT_EQ(server_->counters().writes, 1u) << "the corrupt one not applied";
  EXPECT_EQ(client->crc_errors(), 1u);
  EXPECT_EQ(client->retries(), 1u);
}

// What the check is for: without it, the same flipped byte reaches the
// caller as data.
TEST_F(PayloadCheckTest, WithoutChecksAFlippedByteGoesUnnoticed) {
  const std::string data = Pattern(10000);
  MakeFile("f", data);
  CorruptingProxy proxy(agent_, CorruptingProxy::kToDaemon, ReplyDataByte(77),
                        1);
  auto client = Connect(proxy, /*checked=*/false);
  ASSERT_NE(client, nullptr);
  std::string back(data.size(), '\0');
  ASSERT_EQ(client->Read("f", 0, back.data(), back.size()), 10000);
  EXPECT_NE(back, data);
  EXPECT_EQ(client->crc_errors(), 0u);
}

// The pool's stats lines (`fgds stat`) show the retries and CRC errors.
TEST_F(PayloadCheckTest, ThePoolsStatsShowRetriesAndCrcErrors) {
  const std::string data = Pattern(10000);
  MakeFile("f", data);
  CorruptingProxy proxy(agent_, CorruptingProxy::kToDaemon, ReplyDataByte(9),
                        1);
  AgentPoolOptions o;
  o.agents = {AgentAddress(HostPort{"127.0.0.1", proxy.port()})};
  o.key = key_;
  o.checked = true;
  auto pool = AgentPool::Create(std::move(o));
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::string back(data.size(), '\0');
  ASSERT_EQ((*pool)->Read(0, "f", 0, back.data(), back.size()), 10000);
  EXPECT_EQ(back, data);
  const std::string stats = (*pool)->StatsText();
  EXPECT_NE(stats.find(" retries=1 crc_errors=1 "), std::string::npos) << stats;
  EXPECT_NE(stats.find("state=up"), std::string::npos) << stats;
}

}  // namespace
}  // namespace fgds::remote
