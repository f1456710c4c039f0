// The agent's RDMA transport against a real RDMA device: soft-RoCE
// (rdma_rxe) in the QEMU guest of tests/rdma/run-lab.sh. A real
// `fgds agent --transport rdma` (FGDS_BINARY) serves a directory; the
// daemon's RdmaAgentClient reads and writes files through it into
// registered host memory, checked byte for byte (and by CRC-32C).
//
// Needs FGDS_RDMA_LAB_ADDR: the IPv4 address of the RDMA netdev (the
// guest's eth0, with rxe0 on it). Without it every test skips (no RDMA
// device here). FGDS_RDMA_LAB_BENCH_MIB (default 32) sizes the throughput
// comparison with the TCP transport.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_client.h"
#include "backend/remote/agent_handshake.h"
#include "backend/remote/crc32c.h"
#include "backend/remote/rdma_agent_client.h"
#include "backend/remote/rdma_connection.h"
#include "gtest/gtest.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/random_bytes.h"

namespace fgds::remote {
namespace {

using testing::AgentProcess;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

class RdmaLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* addr = getenv("FGDS_RDMA_LAB_ADDR");
    if (addr == nullptr) GTEST_SKIP() << "no RDMA device (FGDS_RDMA_LAB_ADDR)";
    addr_ = addr;
    auto dir = testing::MakeTempDir("fgds-rdma-lab.");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
    data_ = dir_ + "/data";
    ASSERT_EQ(mkdir(data_.c_str(), 0755), 0);
    key_ = dir_ + "/agent.key";
    WriteKey(key_, std::string(48, 'k'));
  }
  void TearDown() override {
    agent_.reset();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  static void WriteKey(const std::string& path, const std::string& secret) {
    std::ofstream(path) << secret;
    chmod(path.c_str(), 0600);
  }
  void WriteFile(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream out(data_ + "/" + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<uint8_t> FileBytes(const std::string& name) {
    std::ifstream in(data_ + "/" + name, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }

  void StartAgent(const std::string& transport = "rdma") {
    auto agent = AgentProcess::Start({"--listen", addr_ + ":0", "--data", data_,
                                      "--key", key_, "--transport", transport});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
    ASSERT_NE(agent_->first_line().find("(" + transport + ")"),
              std::string::npos)
        << agent_->first_line();
  }
  HostPort AgentAddress() {
    auto hp = ParseHostPort(agent_->address());
    EXPECT_TRUE(hp.ok()) << hp.status();
    return *hp;
  }
  RdmaAgentClientOptions ClientOptions(const std::string& secret) {
    RdmaAgentClientOptions o;
    o.agent = AgentAddress();
    o.key.secret = secret;
    o.connect_timeout_ms = 10000;
    o.io_timeout_ms = 15000;
    return o;
  }

  std::string addr_, dir_, data_, key_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(RdmaLabTest, ReadsAndWritesFilesByteForByte) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  // 20 MiB + 123: more than two max_io requests, and an uneven tail.
  const size_t size = (20u << 20) + 123;
  const std::vector<uint8_t> content = testing::RandomBytes(size, 14);
  WriteFile("weights.bin", content);
  auto client = RdmaAgentClient::Connect(ClientOptions(std::string(48, 'k')));
  ASSERT_TRUE(client.ok()) << client.status();
  RdmaAgentClient& c = **client;
  EXPECT_GT(c.credits(), 1u);

  std::vector<uint8_t> buf(size + 4096, 0xee);
  auto region = c.RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();

  // The whole file, landing at offset 4096 of the region.
  ASSERT_EQ(c.Read("weights.bin", 0, **region, 4096, size),
            static_cast<int64_t>(size))
      << c.last_error();
  EXPECT_EQ(Crc32c(0, buf.data() + 4096, size),
            Crc32c(0, content.data(), size));
  EXPECT_TRUE(std::equal(content.begin(), content.end(), buf.begin() + 4096));
  // Nothing before the range was touched.
  EXPECT_EQ(buf[4095], 0xee);

  // Unaligned, across a request boundary, short at the end of the file.
  std::fill(buf.begin(), buf.end(), 0);
  const size_t off = (8u << 20) - 7;
  ASSERT_EQ(c.Read("weights.bin", off, **region, 1, size),
            static_cast<int64_t>(size - off));
  EXPECT_TRUE(
      std::equal(content.begin() + off, content.end(), buf.begin() + 1));

  // A write of 9 MiB from the region at an offset, seen in the file.
  const std::vector<uint8_t> update = testing::RandomBytes(9u << 20, 15);
  std::copy(update.begin(), update.end(), buf.begin() + 100);
  ASSERT_EQ(c.Write("weights.bin", 4096 + 5, **region, 100, update.size()),
            static_cast<int64_t>(update.size()))
      << c.last_error();
  std::vector<uint8_t> expected = content;
  std::copy(update.begin(), update.end(), expected.begin() + 4096 + 5);
  const std::vector<uint8_t> now = FileBytes("weights.bin");
  ASSERT_EQ(now.size(), expected.size());
  EXPECT_EQ(Crc32c(0, now.data(), now.size()),
            Crc32c(0, expected.data(), expected.size()));
  EXPECT_TRUE(now == expected);

  // File errors are that request's result; the connection stays.
  EXPECT_EQ(c.Read("missing.bin", 0, **region, 0, 4096), -ENOENT);
  EXPECT_EQ(c.Read("../etc/passwd", 0, **region, 0, 4096), -EINVAL);
  EXPECT_EQ(c.Read("weights.bin", 0, **region, 1, buf.size()), -EINVAL);
  EXPECT_EQ(c.Read("weights.bin", 0, **region, 0, 10), 10);
  EXPECT_EQ(c.connects(), 1u);

  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find("(0 refused, 0 failed the key)"), std::string::npos)
      << rest;
}

// Checked payloads over RDMA: the data travels in no frame, so its
// CRC-32C travels in the write request (checked by the agent after its
// RDMA READ) and in the read reply (checked here after the RDMA WRITE).
TEST_F(RdmaLabTest, CheckedPayloadsRoundTrip) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const size_t size = (3u << 20) + 5;
  const std::vector<uint8_t> content = testing::RandomBytes(size, 21);
  WriteFile("c.bin", content);
  RdmaAgentClientOptions options = ClientOptions(std::string(48, 'k'));
  options.checked = true;
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  RdmaAgentClient& c = **client;
  EXPECT_TRUE(c.checked());
  std::vector<uint8_t> buf(size);
  auto region = c.RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ(c.Read("c.bin", 0, **region, 0, size), static_cast<int64_t>(size))
      << c.last_error();
  EXPECT_TRUE(buf == content);
  const std::vector<uint8_t> update = testing::RandomBytes(1u << 20, 22);
  std::copy(update.begin(), update.end(), buf.begin());
  ASSERT_EQ(c.Write("c.bin", 77, **region, 0, update.size()),
            static_cast<int64_t>(update.size()))
      << c.last_error();
  std::vector<uint8_t> expected = content;
  std::copy(update.begin(), update.end(), expected.begin() + 77);
  EXPECT_TRUE(FileBytes("c.bin") == expected);
  EXPECT_EQ(c.crc_errors(), 0u);
  EXPECT_EQ(c.retries(), 0u);
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find(" 0 payloads refused for their CRC"), std::string::npos)
      << rest;
}

// A real RDMA peer playing a broken daemon: a write whose data does not
// match the CRC in its request is refused (EBADMSG) and not applied, and
// the agent counts it.
TEST_F(RdmaLabTest, AWriteWhoseDataDoesNotMatchItsCrcIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  WriteFile("f", std::vector<uint8_t>(4096, '.'));
  auto conn = RdmaConnection::Connect(AgentAddress(), nullptr, 4, 10000);
  ASSERT_TRUE(conn.ok()) << conn.status();
  RdmaChannel channel(**conn);
  AgentKey key;
  key.secret = std::string(48, 'k');
  ChallengeBody challenge;
  std::string why;
  ASSERT_EQ(RunDaemonHandshake(channel, key, 4242, kHelloWantChecked, 10000,
                               &challenge, &why),
            0)
      << why;
  std::vector<uint8_t> data(4096, 'X');
  auto region = RdmaMemoryRegion::RegisterHost((*conn)->domain(), data.data(),
                                               data.size(), true);
  ASSERT_TRUE(region.ok()) << region.status();
  IoBody io;
  io.seq = 1;
  io.length = 4096;
  io.remote_addr = (*region)->remote_base();
  io.rkey = (*region)->rkey();
  io.path = "f";
  io.data_crc = Crc32c(0, data.data(), data.size()) ^ 1;
  std::vector<uint8_t> payload;
  EncodeIo(io, &payload);
  ASSERT_EQ((*conn)->SendFrame(FrameType::kWrite, 1, payload, 10000), 0);
  FrameHeader header;
  ASSERT_EQ((*conn)->ReceiveFrame(&header, &payload, 2048, 10000), 0);
  ASSERT_EQ(header.type, FrameType::kError);
  ErrorBody error;
  ASSERT_EQ(DecodeError(payload, &error), 0);
  EXPECT_EQ(error.error, EBADMSG) << error.message;
  EXPECT_TRUE(FileBytes("f") == std::vector<uint8_t>(4096, '.'));
  conn->reset();
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find(" 1 payloads refused for their CRC"), std::string::npos)
      << rest;
}

// Deferred syncs over RDMA: writes acknowledged unsynced, one sync on
// request; without deferral each write is synced (the agent's counts).
TEST_F(RdmaLabTest, DeferredWritesAreSyncedOnRequest) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  WriteFile("s.bin", std::vector<uint8_t>(1u << 20, '.'));
  RdmaAgentClientOptions options = ClientOptions(std::string(48, 'k'));
  options.deferred_sync = true;
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  RdmaAgentClient& c = **client;
  EXPECT_TRUE(c.deferred_sync());
  EXPECT_NE(c.agent_instance(), 0u);
  std::vector<uint8_t> buf = testing::RandomBytes(1u << 20, 24);
  auto region = c.RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(c.Write("s.bin", i * 4096, **region, i * 4096, 4096), 4096)
        << c.last_error();
  }
  EXPECT_EQ(c.Sync("s.bin"), 0) << c.last_error();
  EXPECT_EQ(c.Sync("missing.bin"), -ENOENT);
  EXPECT_EQ(c.connects(), 1u);
  const std::vector<uint8_t> now = FileBytes("s.bin");
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 4 * 4096, now.begin()));
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find(" 2 syncs (1 failed)"), std::string::npos) << rest;
}

// The agent restarted (same address) between two transfers: the second
// finds its connection gone and is redone once on a new one.
TEST_F(RdmaLabTest, ATransferIsRedoneOnceOnANewConnection) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const std::vector<uint8_t> content = testing::RandomBytes(1u << 20, 23);
  WriteFile("r.bin", content);
  auto client = RdmaAgentClient::Connect(ClientOptions(std::string(48, 'k')));
  ASSERT_TRUE(client.ok()) << client.status();
  RdmaAgentClient& c = **client;
  std::vector<uint8_t> buf(content.size());
  auto region = c.RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ(c.Read("r.bin", 0, **region, 0, buf.size()), 1 << 20);
  const std::string address = agent_->address();
  std::string rest;
  agent_->Stop(&rest);
  auto again = AgentProcess::Start({"--listen", address, "--data", data_,
                                    "--key", key_, "--transport", "rdma"});
  ASSERT_TRUE(again.ok()) << again.status();
  agent_ = std::move(*again);
  std::fill(buf.begin(), buf.end(), 0);
  ASSERT_EQ(c.Read("r.bin", 0, **region, 0, buf.size()), 1 << 20)
      << c.last_error();
  EXPECT_TRUE(buf == content);
  EXPECT_EQ(c.retries(), 1u);
  EXPECT_EQ(c.connects(), 2u);
}

TEST_F(RdmaLabTest, AWrongKeyIsRefusedBeforeAnyData) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  WriteFile("secret.bin", testing::RandomBytes(4096, 16));
  auto client = RdmaAgentClient::Connect(ClientOptions(std::string(48, 'x')));
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kPermissionDenied)
      << client.status();
  EXPECT_NE(client.status().message().find("does not hold our cluster key"),
            std::string::npos)
      << client.status();
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  // The agent proves first, so a daemon with the wrong key stops there;
  // the agent served nothing.
  EXPECT_NE(rest.find(", 0 reads (0 bytes), 0 writes"), std::string::npos)
      << rest;
}

TEST_F(RdmaLabTest, AnAgentKilledMidTransferGivesAnErrnoNotAHang) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const size_t size = 64u << 20;
  WriteFile("big.bin", testing::RandomBytes(size, 17));
  RdmaAgentClientOptions options = ClientOptions(std::string(48, 'k'));
  options.io_timeout_ms = 10000;
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<uint8_t> buf(size);
  auto region = (*client)->RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();

  const pid_t pid = agent_->pid();
  std::thread killer([pid] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(pid, SIGKILL);
  });
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = (*client)->Read("big.bin", 0, **region, 0, size);
  const double took = Seconds(start);
  killer.join();
  std::printf("killed mid-read: result %ld after %.2f s: %s\n",
              static_cast<long>(n), took, (*client)->last_error().c_str());
  // An errno (not a short count, which would read as the end of the
  // file), and no hang past the request timeout: the transfer's one retry
  // finds no agent (ECONNREFUSED), or the first attempt's error stands.
  EXPECT_TRUE(n == -ECONNRESET || n == -ETIMEDOUT || n == -ECONNREFUSED) << n;
  EXPECT_EQ((*client)->retries(), 1u);
  EXPECT_LT(took,
            (options.io_timeout_ms + options.connect_timeout_ms) / 1000.0 + 5);
  // The next call finds no agent: an errno within the connect timeout.
  const auto again = std::chrono::steady_clock::now();
  const int64_t m = (*client)->Read("big.bin", 0, **region, 0, 4096);
  EXPECT_LT(m, 0) << "read after the agent died returned " << m;
  EXPECT_LT(Seconds(again), options.connect_timeout_ms / 1000.0 + 5);
  std::printf("after the kill: %ld (%s)\n", static_cast<long>(m),
              (*client)->last_error().c_str());
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 128 + SIGKILL) << rest;
}

TEST_F(RdmaLabTest, ADaemonKilledMidTransferCostsTheAgentNothing) {
  ASSERT_NO_FATAL_FAILURE(StartAgent());
  const size_t size = 64u << 20;
  const std::vector<uint8_t> content = testing::RandomBytes(size, 19);
  WriteFile("big.bin", content);
  const RdmaAgentClientOptions options = ClientOptions(std::string(48, 'k'));
  // A daemon (another process: verbs state does not survive fork, so a
  // fresh one, this binary's ReadForever below) reading the file over and
  // over, killed while its requests are in flight.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("FGDS_RDMA_LAB_READ_FOREVER", agent_->address().c_str(), 1);
    execl("/proc/self/exe", "fgds_rdma_lab_test",
          "--gtest_filter=RdmaLabChild.ReadForever", nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "the child daemon exited with " << WEXITSTATUS(status);

  // The agent serves the next daemon, all of the file.
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<uint8_t> buf(size);
  auto region = (*client)->RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ((*client)->Read("big.bin", 0, **region, 0, size),
            static_cast<int64_t>(size))
      << (*client)->last_error();
  EXPECT_EQ(Crc32c(0, buf.data(), size), Crc32c(0, content.data(), size));
  client->reset();
  // And stops cleanly: the dead daemon's connection was torn down.
  std::string rest;
  EXPECT_EQ(agent_->Stop(&rest), 0) << rest;
  EXPECT_NE(rest.find("stopped by Terminated after 2 connections"),
            std::string::npos)
      << rest;
}

// The daemon that ADaemonKilledMidTransferCostsTheAgentNothing kills: runs
// only in the process it starts.
TEST(RdmaLabChild, ReadForever) {
  const char* address = getenv("FGDS_RDMA_LAB_READ_FOREVER");
  if (address == nullptr) GTEST_SKIP() << "run by another test";
  RdmaAgentClientOptions options;
  auto hp = ParseHostPort(address);
  ASSERT_TRUE(hp.ok()) << hp.status();
  options.agent = *hp;
  options.key.secret = std::string(48, 'k');
  auto client = RdmaAgentClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<uint8_t> buf(64u << 20);
  auto region = (*client)->RegisterHost(buf.data(), buf.size());
  ASSERT_TRUE(region.ok()) << region.status();
  for (;;) (*client)->Read("big.bin", 0, **region, 0, buf.size());
}

// Throughput of the two transports in the same guest, same file, same
// buffer. Soft-RoCE under TCG: functional numbers, no target.
TEST_F(RdmaLabTest, ThroughputRdmaAndTcp) {
  const char* mib_env = getenv("FGDS_RDMA_LAB_BENCH_MIB");
  const size_t size = size_t{mib_env ? std::strtoul(mib_env, nullptr, 10) : 32}
                      << 20;
  const std::vector<uint8_t> content = testing::RandomBytes(size, 18);
  WriteFile("bench.bin", content);
  std::vector<uint8_t> buf(size);
  const uint32_t crc = Crc32c(0, content.data(), size);

  ASSERT_NO_FATAL_FAILURE(StartAgent("rdma"));
  double rdma_read_s, rdma_write_s;
  {
    auto client = RdmaAgentClient::Connect(ClientOptions(std::string(48, 'k')));
    ASSERT_TRUE(client.ok()) << client.status();
    auto region = (*client)->RegisterHost(buf.data(), buf.size());
    ASSERT_TRUE(region.ok()) << region.status();
    auto start = std::chrono::steady_clock::now();
    ASSERT_EQ((*client)->Read("bench.bin", 0, **region, 0, size),
              static_cast<int64_t>(size));
    rdma_read_s = Seconds(start);
    ASSERT_EQ(Crc32c(0, buf.data(), size), crc);
    start = std::chrono::steady_clock::now();
    ASSERT_EQ((*client)->Write("bench.bin", 0, **region, 0, size),
              static_cast<int64_t>(size));
    rdma_write_s = Seconds(start);
  }
  agent_.reset();

  ASSERT_NO_FATAL_FAILURE(StartAgent("tcp"));
  double tcp_read_s, tcp_write_s;
  {
    AgentClientOptions o;
    o.agent = AgentAddress();
    o.key.secret = std::string(48, 'k');
    auto client = AgentClient::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status();
    std::fill(buf.begin(), buf.end(), 0);
    auto start = std::chrono::steady_clock::now();
    ASSERT_EQ((*client)->Read("bench.bin", 0, buf.data(), size),
              static_cast<int64_t>(size));
    tcp_read_s = Seconds(start);
    ASSERT_EQ(Crc32c(0, buf.data(), size), crc);
    start = std::chrono::steady_clock::now();
    ASSERT_EQ((*client)->Write("bench.bin", 0, buf.data(), size),
              static_cast<int64_t>(size));
    tcp_write_s = Seconds(start);
  }
  const double mib = static_cast<double>(size) / (1 << 20);
  std::printf(
      "FGDS-RDMA-BENCH %zu MiB: rdma read %.1f MiB/s write %.1f MiB/s; tcp "
      "read %.1f MiB/s write %.1f MiB/s (soft-RoCE under QEMU TCG)\n",
      size >> 20, mib / rdma_read_s, mib / rdma_write_s, mib / tcp_read_s,
      mib / tcp_write_s);
}

}  // namespace
}  // namespace fgds::remote
