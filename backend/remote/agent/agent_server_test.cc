// AgentServer and AgentClient together over real loopback TCP, serving a
// real directory: data, the key, paths, limits, retries, and peers that
// break the protocol.
#include "backend/remote/agent/agent_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backend/remote/agent_client.h"
#include "backend/remote/frame_stream.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> v(size);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<uint8_t>(x);
  }
  return v;
}

class AgentServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agent_server_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/root";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
    key_.secret = std::string(48, 'K');
  }
  void TearDown() override {
    server_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }

  void StartServer(AgentServerOptions options = {}) {
    options.listen = {"127.0.0.1", port_};
    if (options.key.secret.empty()) options.key = key_;
    auto store = DirStore::Open(root_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto server = AgentServer::Start(std::move(options), std::move(*store));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto bound = ParseHostPort(server_->address());
    ASSERT_TRUE(bound.ok());
    port_ = bound->port;  // a restart reuses it
  }

  AgentClientOptions ClientOptions() {
    AgentClientOptions o;
    o.agent = {"127.0.0.1", port_};
    o.key = key_;
    o.io_timeout_ms = 5000;
    return o;
  }

  std::unique_ptr<AgentClient> Connect(AgentClientOptions o) {
    auto client = AgentClient::Connect(std::move(o));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  void MakeFile(const std::string& name, const std::vector<uint8_t>& data) {
    std::ofstream f(root_ + "/" + name, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data.data()), data.size());
  }
  std::vector<uint8_t> FileBytes(const std::string& name) {
    std::ifstream f(root_ + "/" + name, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  }

  // A raw connection for playing a broken or hostile daemon.
  std::unique_ptr<FrameStream> Raw() {
    int fd = ConnectTcp({"127.0.0.1", port_}, 2000);
    EXPECT_GE(fd, 0);
    return std::make_unique<FrameStream>(fd);
  }
  // Sends one frame of `payload` on a raw connection.
  static int SendRaw(FrameStream& s, FrameType type, uint64_t request_id,
                     std::vector<uint8_t>& payload) {
    struct iovec part = {payload.data(), payload.size()};
    return s.Send(type, request_id, {&part, 1}, 2000);
  }
  // Plays a daemon's hello (client id, nonce) on a raw connection and
  // decodes the agent's challenge: 0 or -errno.
  static int RawHello(FrameStream& s, uint64_t client_id, const Nonce& nonce,
                      ChallengeBody* challenge) {
    HelloBody hello;
    hello.client_id = client_id;
    hello.client_nonce = nonce;
    std::vector<uint8_t> p;
    EncodeHello(hello, &p);
    if (int rc = SendRaw(s, FrameType::kHello, 0, p); rc != 0) return rc;
    FrameHeader h;
    if (int rc = s.ReceiveHeader(&h, 128, 2000); rc != 0) return rc;
    std::vector<uint8_t> cp(h.payload_len);
    if (int rc = s.ReceivePayload(cp.data(), cp.size(), 2000); rc != 0) {
      return rc;
    }
    return DecodeChallenge(cp, challenge);
  }
  // Reads the kError frame the agent sends before disconnecting.
  int ExpectError(FrameStream& s) {
    FrameHeader h;
    int rc = s.ReceiveHeader(&h, 4096, 3000);
    if (rc != 0) return rc;
    std::vector<uint8_t> p(h.payload_len);
    EXPECT_EQ(s.ReceivePayload(p.data(), p.size(), 3000), 0);
    EXPECT_EQ(h.type, FrameType::kError);
    ErrorBody e;
    EXPECT_EQ(DecodeError(p, &e), 0);
    return e.error;
  }

  std::string dir_, root_;
  AgentKey key_;
  uint16_t port_ = 0;
  std::unique_ptr<AgentServer> server_;
};

TEST_F(AgentServerTest, WritesAndReadsLandInTheFileAcrossRequestSplits) {
  AgentServerOptions options;
  options.max_io = 64 << 10;  // so 1 MiB takes 17 requests
  StartServer(options);
  MakeFile("data", {});
  auto client = Connect(ClientOptions());
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->max_io(), 64u << 10);
  const std::vector<uint8_t> data = Pattern((1 << 20) + 123, 1);
  ASSERT_EQ(client->Write("data", 4095, data.data(), data.size()),
            static_cast<int64_t>(data.size()))
      << client->last_error();
  std::vector<uint8_t> file = FileBytes("data");
  ASSERT_EQ(file.size(), 4095 + data.size());
  EXPECT_EQ(std::memcmp(file.data() + 4095, data.data(), data.size()), 0);
  EXPECT_TRUE(std::all_of(file.begin(), file.begin() + 4095,
                          [](uint8_t b) { return b == 0; }));

  std::vector<uint8_t> back(file.size() + 1000, 0xee);
  EXPECT_EQ(client->Read("data", 0, back.data(), back.size()),
            static_cast<int64_t>(file.size()))
      << "short at end of file";
  EXPECT_EQ(std::memcmp(back.data(), file.data(), file.size()), 0);
  EXPECT_EQ(client->Read("data", file.size() + 10, back.data(), 100), 0);
  EXPECT_EQ(server_->counters().bytes_written, data.size());
}

TEST_F(AgentServerTest, CheckedPayloadsCarryACrcBothWays) {
  StartServer();
  const std::vector<uint8_t> data = Pattern(300000, 2);
  MakeFile("f", data);
  AgentClientOptions o = ClientOptions();
  o.checked = true;
  auto client = Connect(o);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->checked());
  std::vector<uint8_t> back(data.size());
  ASSERT_EQ(client->Read("f", 0, back.data(), back.size()),
            static_cast<int64_t>(data.size()));
  EXPECT_EQ(back, data);
  ASSERT_EQ(client->Write("f", 7, data.data(), 1000), 1000);
}

TEST_F(AgentServerTest, FileErrorsAreResultsAndTheConnectionGoesOn) {
  StartServer();
  ASSERT_EQ(mkdir((root_ + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(symlink("/etc", (root_ + "/etc-link").c_str()), 0);
  ASSERT_EQ(symlink("/etc/hostname", (root_ + "/file-link").c_str()), 0);
  MakeFile("ok", Pattern(10, 3));
  auto client = Connect(ClientOptions());
  ASSERT_NE(client, nullptr);
  char buf[64];
  EXPECT_EQ(client->Read("missing", 0, buf, sizeof(buf)), -ENOENT);
  EXPECT_EQ(client->Read("sub", 0, buf, sizeof(buf)), -EISDIR);
  EXPECT_EQ(client->Read("fifo", 0, buf, sizeof(buf)), -EINVAL)
      << "a FIFO is refused without blocking the agent";
  EXPECT_EQ(client->Read("etc-link/hostname", 0, buf, sizeof(buf)), -EXDEV)
      << "a symlink may not lead out of the root";
  EXPECT_EQ(client->Read("file-link", 0, buf, sizeof(buf)), -EINVAL);
  EXPECT_EQ(client->Read("../etc/hostname", 0, buf, sizeof(buf)), -EINVAL);
  EXPECT_EQ(client->Write("missing", 0, buf, 4), -ENOENT)
      << "the agent never creates files";
  EXPECT_EQ(client->Read("ok", 0, buf, sizeof(buf)), 10);
  EXPECT_EQ(client->connects(), 1u) << "file errors do not cost a connection";
}

TEST_F(AgentServerTest, AHostileDaemonsPathIsRefusedByTheAgentToo) {
  StartServer();
  MakeFile("ok", Pattern(10, 3));
  // Past the client's own check: a raw, authenticated-looking request is
  // not possible without the key, so play the full handshake.
  std::unique_ptr<FrameStream> s = Raw();
  Nonce nonce;
  ASSERT_TRUE(MakeNonce(&nonce).ok());
  ChallengeBody ch;
  ASSERT_EQ(RawHello(*s, 99, nonce, &ch), 0);
  AuthBody auth;
  ASSERT_TRUE(ComputeProof(key_, AuthRole::kDaemon, 99, nonce, ch.agent_nonce,
                           &auth.client_proof)
                  .ok());
  std::vector<uint8_t> p;
  EncodeAuth(auth, &p);
  ASSERT_EQ(SendRaw(*s, FrameType::kAuth, 0, p), 0);
  FrameHeader h;
  ASSERT_EQ(s->ReceiveHeader(&h, 128, 2000), 0);
  ASSERT_EQ(h.type, FrameType::kWelcome);
  // A path with ".." that the client library would never send.
  std::vector<uint8_t> io;
  IoBody body;
  body.length = 10;
  body.path = "ok";
  EncodeIo(body, &io);
  const size_t path_at = io.size() - 2;
  io.resize(path_at);
  const std::string evil = "../../etc/passwd";
  io.insert(io.end(), evil.begin(), evil.end());
  io[32] = static_cast<uint8_t>(evil.size());  // path_len
  ASSERT_EQ(SendRaw(*s, FrameType::kRead, 5, io), 0);
  EXPECT_EQ(ExpectError(*s), EINVAL);
  EXPECT_GE(server_->counters().protocol_errors, 1u);
}

TEST_F(AgentServerTest, AWrongKeyIsRefusedInBothDirections) {
  StartServer();
  // The daemon holds another key: the agent's proof fails first, so the
  // daemon never sends a proof of its own.
  AgentClientOptions o = ClientOptions();
  o.key.secret = std::string(48, 'X');
  auto client = AgentClient::Connect(o);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(client.status().message().find("does not hold our cluster key"),
            std::string::npos)
      << client.status();

  // A peer that answers the challenge with a made-up proof.
  std::unique_ptr<FrameStream> s = Raw();
  ChallengeBody ch;
  ASSERT_EQ(RawHello(*s, 5, Nonce{}, &ch), 0);
  AuthBody forged;
  forged.client_proof.fill(0x41);
  std::vector<uint8_t> p;
  EncodeAuth(forged, &p);
  ASSERT_EQ(SendRaw(*s, FrameType::kAuth, 0, p), 0);
  EXPECT_EQ(ExpectError(*s), EACCES);
  EXPECT_EQ(server_->counters().auth_failures, 1u);
  EXPECT_EQ(server_->counters().reads, 0u);
}

TEST_F(AgentServerTest,
       BeforeTheKeyAPeerCanNeitherMakeTheAgentAllocateNorWait) {
  AgentServerOptions options;
  options.handshake_timeout_ms = 200;
  StartServer(options);
  // A hello that announces 8 MiB of payload is refused on its header.
  std::unique_ptr<FrameStream> big = Raw();
  FrameHeader h;
  h.type = FrameType::kHello;
  h.payload_len = 8 << 20;
  uint8_t head[kFrameHeaderSize];
  EncodeHeader(h, head);
  ASSERT_EQ(write(big->fd(), head, sizeof(head)), (ssize_t)sizeof(head));
  EXPECT_EQ(ExpectError(*big), EMSGSIZE);
  // A peer that says nothing is dropped after the handshake timeout.
  std::unique_ptr<FrameStream> silent = Raw();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ExpectError(*silent), ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  // Garbage instead of a frame.
  std::unique_ptr<FrameStream> junk = Raw();
  const char text[] = "GET / HTTP/1.1\r\nHost: agent\r\n\r\n";
  ASSERT_GT(write(junk->fd(), text, sizeof(text)), 0);
  EXPECT_EQ(ExpectError(*junk), EPROTO);
  // And the agent still serves.
  MakeFile("f", Pattern(100, 4));
  auto client = Connect(ClientOptions());
  ASSERT_NE(client, nullptr);
  char buf[100];
  EXPECT_EQ(client->Read("f", 0, buf, sizeof(buf)), 100);
}

TEST_F(AgentServerTest, BadLimitsAreRefusedBeforeListening) {
  for (auto set : std::vector<void (*)(AgentServerOptions*)>{
           [](AgentServerOptions* o) { o->max_connections = 0; },
           [](AgentServerOptions* o) { o->credits = 0; },
           [](AgentServerOptions* o) { o->max_io = 0; },
           [](AgentServerOptions* o) { o->max_io = kMaxIoBytes + 1; }}) {
    AgentServerOptions options;
    options.listen = {"127.0.0.1", 0};
    options.key = key_;
    set(&options);
    auto store = DirStore::Open(root_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto server = AgentServer::Start(std::move(options), std::move(*store));
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(server.status().message().find("max_io in 1.."),
              std::string::npos)
        << server.status();
  }
}

TEST_F(AgentServerTest, ConnectionsBeyondTheLimitAreToldWhy) {
  AgentServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  auto a = Connect(ClientOptions());
  auto b = Connect(ClientOptions());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto c = AgentClient::Connect(ClientOptions());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("connection limit (2)"),
            std::string::npos)
      << c.status();
  EXPECT_EQ(server_->counters().refused_connections, 1u);
  a.reset();  // a slot frees when a daemon leaves
  for (int i = 0; i < 100; ++i) {
    auto d = AgentClient::Connect(ClientOptions());
    if (d.ok()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the freed slot was never reused";
}

TEST_F(AgentServerTest, AWriteRetriedOnANewConnectionIsAppliedOnce) {
  StartServer();
  MakeFile("f", std::vector<uint8_t>(8, '.'));
  // Two connections of one daemon (one client id), each numbering from 1:
  // the second's write 1 is taken for a retry of the first's.
  AgentClientOptions o = ClientOptions();
  o.client_id = 0xfeed;
  auto first = Connect(o);
  auto second = Connect(o);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(first->Write("f", 0, "AAAA", 4), 4);
  EXPECT_EQ(second->Write("f", 0, "BBBB", 4), 4) << "the recorded result";
  const std::vector<uint8_t> file = FileBytes("f");
  EXPECT_EQ(std::string(file.begin(), file.end()), "AAAA....");
  EXPECT_EQ(server_->counters().writes_deduplicated, 1u);
  EXPECT_EQ(server_->counters().writes, 1u);
}

TEST_F(AgentServerTest, ARestartedAgentCostsTheClientOneRetry) {
  StartServer();
  const std::vector<uint8_t> data = Pattern(5000, 5);
  MakeFile("f", data);
  auto client = Connect(ClientOptions());
  ASSERT_NE(client, nullptr);
  std::vector<uint8_t> back(data.size());
  ASSERT_EQ(client->Read("f", 0, back.data(), back.size()), 5000);
  server_->Stop();
  server_.reset();
  StartServer();  // same port
  std::fill(back.begin(), back.end(), 0);
  ASSERT_EQ(client->Read("f", 0, back.data(), back.size()), 5000)
      << client->last_error();
  EXPECT_EQ(back, data);
  EXPECT_EQ(client->connects(), 2u);
  server_->Stop();
  server_.reset();
  EXPECT_LT(client->Read("f", 0, back.data(), back.size()), 0)
      << "no agent: an error, not a hang";
  EXPECT_NE(client->last_error().find("agent 127.0.0.1"), std::string::npos)
      << client->last_error();
}

// A daemon that asked for deferred syncs gets writes acknowledged from
// the store and syncs a file when it needs to (its fsync and close).
TEST_F(AgentServerTest, DeferredWritesAreSyncedWhenTheDaemonAsks) {
  StartServer();
  MakeFile("f", {});
  AgentClientOptions o = ClientOptions();
  o.deferred_sync = true;
  auto client = Connect(o);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->deferred_sync());
  EXPECT_NE(client->agent_instance(), 0u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client->Write("f", i * 4096, Pattern(4096, i).data(), 4096),
              4096);
  }
  EXPECT_EQ(server_->counters().writes, 3u);
  EXPECT_EQ(server_->counters().syncs, 0u) << "no sync per write";
  EXPECT_EQ(client->Sync("f"), 0) << client->last_error();
  EXPECT_EQ(server_->counters().syncs, 1u);
  EXPECT_EQ(FileBytes("f").size(), 3u * 4096);
  EXPECT_EQ(client->Sync("missing"), -ENOENT);
  EXPECT_EQ(server_->counters().sync_errors, 1u);
  EXPECT_EQ(client->Sync("../f"), -EINVAL);
  EXPECT_EQ(client->connects(), 1u) << "a sync's error is the file's";
}

// Without deferral (what a daemon that never sends kSync gets) every
// write is synced before its reply.
TEST_F(AgentServerTest, WithoutDeferralEveryWriteIsSyncedBeforeItsReply) {
  StartServer();
  MakeFile("f", {});
  auto client = Connect(ClientOptions());
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->deferred_sync());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client->Write("f", i * 100, Pattern(100, i).data(), 100), 100);
  }
  EXPECT_EQ(server_->counters().syncs, 3u);
}

TEST_F(AgentServerTest, StopDisconnectsIdleDaemonsPromptly) {
  StartServer();
  auto a = Connect(ClientOptions());
  auto b = Connect(ClientOptions());
  ASSERT_NE(a, nullptr);
  const auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace fgds::remote
