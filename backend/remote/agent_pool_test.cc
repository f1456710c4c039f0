// AgentPool over real agents (AgentServer on a directory, loopback TCP):
// many threads through shared connections, the choice by address, an
// agent going down and coming back, a wrong key, and the stats lines.
#include "backend/remote/agent_pool.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend/remote/agent/agent_server.h"
#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

class AgentPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agent_pool_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    key_.secret = std::string(48, 'P');
  }
  void TearDown() override {
    servers_.clear();
    std::system(("rm -rf " + dir_).c_str());
  }

  // An agent on `host` serving dir_ (port 0: a free one); returns its index.
  size_t StartAgent(const std::string& host, uint16_t port = 0,
                    AgentKey key = {}) {
    AgentServerOptions options;
    options.listen = {host, port};
    options.key = key.secret.empty() ? key_ : key;
    auto store = DirStore::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    auto server = AgentServer::Start(std::move(options), std::move(*store));
    EXPECT_TRUE(server.ok()) << server.status();
    auto bound = ParseHostPort((*server)->address());
    EXPECT_TRUE(bound.ok());
    addresses_.push_back(*bound);
    servers_.push_back(std::move(*server));
    return servers_.size() - 1;
  }

  std::unique_ptr<AgentPool> Pool(int retry_after_ms = 2000,
                                  int io_timeout_ms = 5000) {
    AgentPoolOptions o;
    o.agents.assign(addresses_.begin(), addresses_.end());
    o.key = key_;
    o.retry_after_ms = retry_after_ms;
    o.deferred_sync = true;  // as the ceph backend's
    o.connect_timeout_ms = 1000;
    o.io_timeout_ms = io_timeout_ms;
    auto pool = AgentPool::Create(std::move(o));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? std::move(*pool) : nullptr;
  }

  void MakeFile(const std::string& name, size_t size) {
    int fd =
        open((dir_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    close(fd);
  }

  static std::string Name(const std::string& address, const std::string& f) {
    return "# agent " + address + ": " + f;
  }

  std::string dir_;
  AgentKey key_;
  std::vector<HostPort> addresses_;
  std::vector<std::unique_ptr<AgentServer>> servers_;
};

std::string Chunk(size_t i, size_t size) {
  std::string s(size, '\0');
  for (size_t k = 0; k < size; ++k) s[k] = static_cast<char>(i * 131 + k * 7);
  return s;
}

// Many threads, two agents, one file: every write lands once, whatever
// connection of whichever agent carried it (each connection has its own
// client id: with one id shared by the pool, the agents took a second
// connection's writes for retries of the first's and skipped them).
TEST_F(AgentPoolTest, ConcurrentWritesThroughSharedConnectionsAllLand) {
  StartAgent("127.0.0.1");
  StartAgent("127.0.0.1");
  // What this test checks is where writes land, not how fast: under TSan
  // on two loaded CPUs one reply took over 5 s, both agents were marked
  // down and 164 writes failed.
  auto pool = Pool(/*retry_after_ms=*/2000, /*io_timeout_ms=*/60000);
  ASSERT_NE(pool, nullptr);
  constexpr size_t kChunk = 65536, kChunks = 256, kThreads = 8;
  MakeFile("f", kChunk * kChunks);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < kChunks; i += kThreads) {
        const std::string data = Chunk(i, kChunk);
        const int agent = pool->Choose(nullptr, i);
        if (pool->Write(agent, "f", i * kChunk, data.data(), kChunk) !=
            static_cast<int64_t>(kChunk)) {
          errors.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (size_t i = 0; i < kChunks; ++i) {
    std::string back(kChunk, '\0');
    const int agent = pool->Choose(nullptr, i + 1);  // the other agent
    ASSERT_EQ(pool->Read(agent, "f", i * kChunk, back.data(), kChunk),
              static_cast<int64_t>(kChunk));
    ASSERT_TRUE(back == Chunk(i, kChunk)) << "chunk " << i;
  }
  const std::string stats = pool->StatsText();
  for (const HostPort& a : addresses_) {
    const std::string name = a.host + ":" + std::to_string(a.port);
    EXPECT_NE(stats.find(Name(name, "state=up")), std::string::npos) << stats;
  }
  EXPECT_NE(stats.find("writes=128 write_bytes=8388608"), std::string::npos)
      << stats;
}

TEST_F(AgentPoolTest, ChoosesTheAgentOnTheGivenAddressElseSpreads) {
  StartAgent("127.0.0.1");
  StartAgent("127.0.0.2");
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  struct sockaddr_storage near = {};
  auto* v4 = reinterpret_cast<struct sockaddr_in*>(&near);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(6800);  // an OSD's port: ignored
  ASSERT_EQ(inet_pton(AF_INET, "127.0.0.2", &v4->sin_addr), 1);
  for (uint64_t spread = 0; spread < 4; ++spread) {
    EXPECT_EQ(pool->Choose(&near, spread), 1);
  }
  ASSERT_EQ(inet_pton(AF_INET, "10.9.8.7", &v4->sin_addr), 1);
  EXPECT_EQ(pool->Choose(&near, 0), 0);
  EXPECT_EQ(pool->Choose(&near, 1), 1);
  EXPECT_EQ(pool->Choose(nullptr, 7), 1);
}

// An agent that stops answering is skipped (its requests fail at once,
// counted, with the reason) until retry_after_ms, then used again once it
// answers.
TEST_F(AgentPoolTest, ADownAgentIsSkippedThenTriedAgain) {
  StartAgent("127.0.0.1");
  StartAgent("127.0.0.1");
  MakeFile("f", 4096);
  auto pool = Pool(/*retry_after_ms=*/300);
  ASSERT_NE(pool, nullptr);
  char buf[4096];
  ASSERT_EQ(pool->Read(0, "f", 0, buf, sizeof(buf)), 4096);
  const uint16_t port = addresses_[0].port;
  servers_[0].reset();
  EXPECT_LT(pool->Read(0, "f", 0, buf, sizeof(buf)), 0);
  pool->Fallback(0);
  for (uint64_t spread = 0; spread < 4; ++spread) {
    EXPECT_EQ(pool->Choose(nullptr, spread), 1) << "a down agent was chosen";
  }
  std::string stats = pool->StatsText();
  const std::string name = "127.0.0.1:" + std::to_string(port);
  EXPECT_NE(stats.find(Name(name, "state=down")), std::string::npos) << stats;
  EXPECT_NE(stats.find("fallbacks=1"), std::string::npos) << stats;
  EXPECT_NE(stats.find("failures=1"), std::string::npos) << stats;
  const std::string line = stats.substr(stats.find("# agent " + name));
  EXPECT_EQ(line.substr(0, line.find('\n')).find("last_error=\"\""),
            std::string::npos)
      << stats;

  // Back on the same port: after retry_after_ms it is chosen and used.
  AgentServerOptions options;
  options.listen = {"127.0.0.1", port};
  options.key = key_;
  auto store = DirStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  auto server = AgentServer::Start(std::move(options), std::move(*store));
  ASSERT_TRUE(server.ok()) << server.status();
  servers_[0] = std::move(*server);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(pool->Choose(nullptr, 0), 0);
  EXPECT_EQ(pool->Read(0, "f", 0, buf, sizeof(buf)), 4096);
  stats = pool->StatsText();
  EXPECT_NE(stats.find(Name(name, "state=up")), std::string::npos) << stats;
}

TEST_F(AgentPoolTest, AWrongKeyMarksTheAgentDownWithTheReason) {
  AgentKey other;
  other.secret = std::string(48, 'X');
  StartAgent("127.0.0.1", 0, other);
  MakeFile("f", 4096);
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  char buf[16];
  EXPECT_EQ(pool->Read(0, "f", 0, buf, sizeof(buf)), -EACCES);
  EXPECT_EQ(pool->Choose(nullptr, 0), -1);
  pool->Fallback(-1);
  const std::string stats = pool->StatsText();
  EXPECT_NE(stats.find("does not hold our cluster key"), std::string::npos)
      << stats;
  EXPECT_NE(stats.find("fallbacks_no_agent_up=1"), std::string::npos) << stats;
}

// fsync and close: the file is synced on the agents that took writes of
// it since its last sync, and only on those.
TEST_F(AgentPoolTest, SyncReachesTheAgentsThatTookWritesAndOnlyThose) {
  StartAgent("127.0.0.1");
  StartAgent("127.0.0.1");
  MakeFile("f", 8192);
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  uint64_t told = pool->FileOpened("f");
  EXPECT_EQ(pool->Sync("f", &told, true), 0)
      << "nothing written, nothing to sync";
  const std::string data = Chunk(1, 4096);
  ASSERT_EQ(pool->Write(1, "f", 0, data.data(), data.size()), 4096);
  EXPECT_EQ(servers_[1]->counters().syncs, 0u) << "acknowledged unsynced";
  EXPECT_EQ(pool->Sync("f", &told, true), 0);
  EXPECT_EQ(servers_[1]->counters().syncs, 1u);
  EXPECT_EQ(servers_[0]->counters().syncs, 0u);
  EXPECT_EQ(pool->Sync("f", &told, true), 0);
  EXPECT_EQ(servers_[1]->counters().syncs, 1u) << "synced already";
  const std::string stats = pool->StatsText();
  EXPECT_NE(stats.find(" syncs=1 sync_errors=0 "), std::string::npos) << stats;
}

// A pool whose user never syncs (deferred_sync false, the default) gets
// every write synced before its reply.
TEST_F(AgentPoolTest, WithoutDeferralEachWriteIsSyncedByTheAgent) {
  StartAgent("127.0.0.1");
  MakeFile("f", 4096);
  AgentPoolOptions o;
  o.agents.assign(addresses_.begin(), addresses_.end());
  o.key = key_;
  auto pool = AgentPool::Create(std::move(o));
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::string data = Chunk(4, 4096);
  ASSERT_EQ((*pool)->Write(0, "f", 0, data.data(), data.size()), 4096);
  EXPECT_EQ(servers_[0]->counters().syncs, 1u);
  uint64_t told = (*pool)->FileOpened("f");
  EXPECT_EQ((*pool)->Sync("f", &told, true), 0);
  EXPECT_EQ(servers_[0]->counters().syncs, 1u) << "nothing left to sync";
}

// An agent that restarted after it acknowledged writes lost what it had
// not synced: the next sync says so (EIO), once, and the stats say why.
TEST_F(AgentPoolTest, ASyncAfterTheAgentRestartedFailsWithEio) {
  StartAgent("127.0.0.1");
  MakeFile("f", 4096);
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  uint64_t told = pool->FileOpened("f");
  const std::string data = Chunk(2, 4096);
  ASSERT_EQ(pool->Write(0, "f", 0, data.data(), data.size()), 4096);
  const uint16_t port = addresses_[0].port;
  servers_.clear();
  addresses_.clear();
  StartAgent("127.0.0.1", port);
  EXPECT_EQ(pool->Sync("f", &told, true), -EIO);
  const std::string stats = pool->StatsText();
  EXPECT_NE(stats.find("sync_errors=1"), std::string::npos) << stats;
  EXPECT_NE(stats.find("restarted"), std::string::npos) << stats;
  EXPECT_EQ(pool->Sync("f", &told, true), 0) << "reported once";
  EXPECT_EQ(pool->Sync("f", &told, false), 0) << "and not at the close";
  pool->FileClosed("f");
}

// An agent gone with writes it acknowledged: its sync fails (EIO), and
// every handle of the file open then hears of it. The close of one
// (here first: a forked child's copy of the writer's descriptor, closed
// at its exec) meets the failure, and the writer's fsync is still told;
// each close reports it until its handle's fsync has.
TEST_F(AgentPoolTest, ASyncFailureReachesEveryHandleOpenWhenItFailed) {
  StartAgent("127.0.0.1");
  MakeFile("f", 4096);
  auto pool = Pool();
  ASSERT_NE(pool, nullptr);
  uint64_t writer = pool->FileOpened("f");
  uint64_t other = pool->FileOpened("f");
  const std::string data = Chunk(5, 4096);
  ASSERT_EQ(pool->Write(0, "f", 0, data.data(), data.size()), 4096);
  servers_.clear();
  EXPECT_EQ(pool->Sync("f", &other, false), -EIO) << "the other's close";
  EXPECT_NE(pool->StatsText().find("sync_errors=1"), std::string::npos)
      << pool->StatsText();
  pool->FileClosed("f");
  uint64_t later = pool->FileOpened("f");
  EXPECT_EQ(pool->Sync("f", &later, true), 0) << "opened after the failure";
  pool->FileClosed("f");
  EXPECT_EQ(pool->Sync("f", &writer, false), -EIO) << "a close reports";
  EXPECT_EQ(pool->Sync("f", &writer, true), -EIO) << "the writer's fsync";
  EXPECT_EQ(pool->Sync("f", &writer, true), 0) << "told once";
  EXPECT_EQ(pool->Sync("f", &writer, false), 0) << "the writer's close";
  pool->FileClosed("f");
}

// An rdma:// agent that cannot be reached (here: nothing listens, or no
// RDMA device, or a build without RDMA: each a reason of its own) is down
// with the reason in the stats, its requests come back as errors for the
// caller to serve, and the stats line names it and its transport. The
// transfers themselves are tested over soft-RoCE in the rdma lab
// (tests/rdma/rdma_mount_lab_test.cc).
TEST_F(AgentPoolTest, AnUnreachableRdmaAgentIsDownWithTheReason) {
  AgentPoolOptions o;
  o.agents = {AgentAddress(HostPort{"127.0.0.1", 1}, AgentTransport::kRdma)};
  o.key = key_;
  o.connect_timeout_ms = 1000;
  auto pool = AgentPool::Create(std::move(o));
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->PathOf(0), backend::IoPath::kAgentRdma);
  char buf[16];
  const int64_t n = (*pool)->Read(0, "f", 0, buf, sizeof(buf));
  EXPECT_TRUE(n == -EHOSTDOWN || n == -EACCES) << n;
  (*pool)->Fallback(0);
  EXPECT_EQ((*pool)->Choose(nullptr, 0), -1);
  const std::string stats = (*pool)->StatsText();
  EXPECT_NE(stats.find("# agent rdma://127.0.0.1:1: state=down path=rdma "
                       "reads=0"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("fallbacks=1"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("last_error=\"\""), std::string::npos)
      << "no reason: " << stats;
}

// GPU memory (Kind::kDevice) with the dma-buf a session kept for the NIC.
class DeviceRegion : public backend::MemoryRegion {
 public:
  DeviceRegion(char* base, uint64_t size, int fd)
      : MemoryRegion(base, size, Kind::kDevice, 0), fd_(fd) {}
  int dmabuf_fd() const override { return fd_; }

 private:
  const int fd_;
};

// Whether a device region can never move by the pool's agents: the answer
// a backend without its own way to GPU memory gives its client ("bounce,
// for good"). Only a maybe with an RDMA agent (built with RDMA), its
// dma-buf, unchecked payloads and no failed registration.
TEST_F(AgentPoolTest, DeviceMemoryNeverMovesWithoutAWayForTheNic) {
  char base[4096];
  DeviceRegion without(base, sizeof(base), -1);
  DeviceRegion with(base, sizeof(base), 0);  // a descriptor; never used here
  auto make = [&](AgentTransport transport, bool checked) {
    AgentPoolOptions o;
    o.agents = {AgentAddress(HostPort{"127.0.0.1", 1}, transport)};
    o.key = key_;
    o.checked = checked;
    auto pool = AgentPool::Create(std::move(o));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return std::move(*pool);
  };
  auto tcp = make(AgentTransport::kTcp, false);
  EXPECT_TRUE(tcp->DeviceNeverMoves(with));
  auto rdma = make(AgentTransport::kRdma, false);
  EXPECT_TRUE(rdma->DeviceNeverMoves(without));
#ifdef FGDS_HAVE_RDMA
  EXPECT_FALSE(rdma->DeviceNeverMoves(with));
#else
  EXPECT_TRUE(rdma->DeviceNeverMoves(with));
#endif
  auto checked = make(AgentTransport::kRdma, true);
  EXPECT_TRUE(checked->DeviceNeverMoves(with));
  // The counters of the "# agents:" line.
  rdma->NoteGpuBounce(false);
  rdma->NoteGpuBounce(true);
  const std::string stats = rdma->StatsText();
  EXPECT_NE(stats.find(" gpu_bounced=2 gpu_bounced_for_good=1\n"),
            std::string::npos)
      << stats;
}

TEST_F(AgentPoolTest, BadPoolsAreRefused) {
  AgentPoolOptions none;
  none.key = key_;
  EXPECT_FALSE(AgentPool::Create(none).ok());
  AgentPoolOptions unresolvable;
  unresolvable.key = key_;
  unresolvable.agents = {HostPort{"no-such-host.invalid", 7070}};
  auto pool = AgentPool::Create(unresolvable);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("no-such-host.invalid"),
            std::string::npos);
  AgentPoolOptions many;
  many.key = key_;
  many.agents.assign(kMaxAgents + 1, HostPort{"127.0.0.1", 7070});
  EXPECT_FALSE(AgentPool::Create(many).ok());
}

}  // namespace
}  // namespace fgds::remote
