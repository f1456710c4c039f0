// RouteThroughAgents over a real local backend and a real agent
// (AgentServer on the same directory, loopback TCP): reads and writes go to
// the agent and report its path; files the agent cannot name (unlinked,
// O_APPEND writes) and a dead agent go to the local backend without an
// error; the agent refuses a checked path that names another file; and
// MemoryRegion's attachment lives exactly as long as its region.
#include "backend/agent_backend.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <semaphore>
#include <string>

#include "backend/backend_factory.h"
#include "backend/local/local_backend.h"
#include "backend/remote/agent/agent_server.h"
#include "backend/remote/agent/corrupting_proxy.h"
#include "backend/remote/inode_name.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

class WaitingCompletion : public FileIoCompletion {
 public:
  void Complete(int64_t result) override {
    result_ = result;
    done_.release();
  }
  int64_t Wait() {
    done_.acquire();
    return result_;
  }

 private:
  int64_t result_ = 0;
  std::binary_semaphore done_{0};
};

class AgentBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fgds-agent-backend-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    key_.secret = std::string(48, 'A');
    remote::AgentServerOptions options;
    options.listen = {"127.0.0.1", 0};
    options.key = key_;
    auto store = remote::DirStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto server =
        remote::AgentServer::Start(std::move(options), std::move(*store));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto bound = remote::ParseHostPort(server_->address());
    ASSERT_TRUE(bound.ok());

    auto local = LocalBackend::Create(dir_, {});
    ASSERT_TRUE(local.ok()) << local.status();
    remote::AgentPoolOptions pool_options;
    pool_options.agents = {remote::AgentAddress(*bound)};
    pool_options.key = key_;
    pool_options.connect_timeout_ms = 1000;
    pool_options.retry_after_ms = 60000;
    auto pool = remote::AgentPool::Create(std::move(pool_options));
    ASSERT_TRUE(pool.ok()) << pool.status();
    auto backend =
        RouteThroughAgents(std::unique_ptr<Backend>(*std::move(local)),
                           dir_ + "/", *std::move(pool), 2);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
  }
  void TearDown() override {
    backend_.reset();
    if (server_ != nullptr) server_->Stop();
    std::filesystem::remove_all(dir_);
  }

  File* Create(const std::string& name, int flags = O_RDWR) {
    Caller root;
    Entry entry;
    File* file = nullptr;
    EXPECT_EQ(backend_->Create(root, kRootNode, name.c_str(), 0644, flags,
                               &entry, &file),
              0);
    return file;
  }
  int64_t Io(FileOp op, File* file, void* buf, uint64_t len, uint64_t offset,
             IoPath* path) {
    WaitingCompletion completion;
    FileIoRequest request{op,  file,   nullptr, static_cast<char*>(buf),
                          len, offset, 0,       &completion};
    backend_->SubmitIo({&request, 1});
    const int64_t result = completion.Wait();
    *path = completion.path();
    return result;
  }
  std::string Backing(const std::string& name) {
    std::string out(1 << 16, '\0');
    int fd = open((dir_ + "/" + name).c_str(), O_RDONLY);
    const ssize_t n = fd >= 0 ? read(fd, out.data(), out.size()) : -1;
    if (fd >= 0) close(fd);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }

  std::string dir_;
  remote::AgentKey key_;
  std::unique_ptr<remote::AgentServer> server_;
  std::unique_ptr<Backend> backend_;
};

TEST_F(AgentBackendTest, ReadsAndWritesGoToTheAgentByName) {
  File* file = Create("f");
  ASSERT_NE(file, nullptr);
  char data[] = "through the agent";
  IoPath path = IoPath::kNone;
  EXPECT_EQ(Io(FileOp::kWrite, file, data, 17, 3, &path), 17);
  EXPECT_EQ(path, IoPath::kAgentTcp);
  EXPECT_EQ(Backing("f"), std::string(3, '\0') + "through the agent");
  char back[32] = {};
  EXPECT_EQ(Io(FileOp::kRead, file, back, sizeof(back), 3, &path), 17);
  EXPECT_EQ(path, IoPath::kAgentTcp);
  EXPECT_EQ(std::string(back, 17), "through the agent");
  // RunIo goes the same way.
  FileIoRequest request{FileOp::kRead, file, nullptr, back, 7, 11, 0, nullptr};
  EXPECT_EQ(backend_->RunIo(request, &path), 7);
  EXPECT_EQ(path, IoPath::kAgentTcp);
  EXPECT_EQ(std::string(back, 7), "the age");
  const remote::AgentCounters c = server_->counters();
  EXPECT_EQ(c.writes, 1u);
  EXPECT_EQ(c.reads, 2u);
  // No passthrough: the kernel would bypass the agents.
  EXPECT_EQ(backend_->PassthroughFd(file), -1);
  EXPECT_NE(backend_->StatsText().find("path=tcp reads=2"), std::string::npos)
      << backend_->StatsText();
  backend_->Release(file);
}

TEST_F(AgentBackendTest, WhatTheAgentCannotNameStaysLocal) {
  // Unlinked while open: its descriptor's path names nothing.
  File* file = Create("gone");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(backend_->Unlink(kRootNode, "gone"), 0);
  char data[] = "local";
  IoPath path = IoPath::kNone;
  EXPECT_EQ(Io(FileOp::kWrite, file, data, 5, 0, &path), 5);
  EXPECT_EQ(path, IoPath::kPageCache);
  char back[8] = {};
  EXPECT_EQ(Io(FileOp::kRead, file, back, 5, 0, &path), 5);
  EXPECT_EQ(std::string(back, 5), "local");
  EXPECT_EQ(path, IoPath::kPageCache);
  backend_->Release(file);
  // O_APPEND: the local descriptor appends, an agent would not.
  File* log = Create("log", O_RDWR | O_APPEND);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(Io(FileOp::kWrite, log, data, 5, 0, &path), 5);
  EXPECT_EQ(path, IoPath::kPageCache);
  backend_->Release(log);
  EXPECT_EQ(server_->counters().writes, 0u);
  EXPECT_NE(backend_->StatsText().find("not_routed=3"), std::string::npos)
      << backend_->StatsText();
}

TEST_F(AgentBackendTest, ADeadAgentFallsBackWithoutAnError) {
  File* file = Create("f");
  ASSERT_NE(file, nullptr);
  server_->Stop();
  char data[] = "still written";
  IoPath path = IoPath::kNone;
  EXPECT_EQ(Io(FileOp::kWrite, file, data, 13, 0, &path), 13);
  EXPECT_EQ(path, IoPath::kPageCache);
  EXPECT_EQ(Backing("f"), "still written");
  const std::string stats = backend_->StatsText();
  EXPECT_NE(stats.find("state=down"), std::string::npos) << stats;
  EXPECT_NE(stats.find("fallbacks=1"), std::string::npos) << stats;
  backend_->Release(file);
}

// --agent-crc (BackendConfig::agent_crc) reaches the agents' connections:
// a byte flipped on the way back (a real TCP peer between the daemon and
// the agent, agent/corrupting_proxy.h) is caught and the read redone; the
// same byte without the option reaches the caller as data.
TEST_F(AgentBackendTest, TheAgentCrcOptionChecksWhatComesBack) {
  std::string data(10000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  { std::ofstream(dir_ + "/f", std::ios::binary) << data; }
  const std::string key_file = dir_ + "/key";
  { std::ofstream(key_file) << key_.secret; }
  ASSERT_EQ(chmod(key_file.c_str(), 0600), 0);
  auto bound = remote::ParseHostPort(server_->address());
  ASSERT_TRUE(bound.ok());
  // The first reply's data byte 77: after the handshake (144 bytes towards
  // the daemon), the reply's header (32) and fixed part (16).
  constexpr uint64_t kFlipAt = 144 + 32 + 16 + 77;
  for (bool crc : {true, false}) {
    SCOPED_TRACE(crc ? "--agent-crc" : "no --agent-crc");
    remote::CorruptingProxy proxy(*bound, remote::CorruptingProxy::kToDaemon,
                                  kFlipAt, /*corrupt_connections=*/1);
    BackendConfig config;
    config.data_dir = dir_;
    config.agents = {
        remote::AgentAddress(remote::HostPort{"127.0.0.1", proxy.port()})};
    config.agent_key = key_file;
    config.agent_crc = crc;
    auto backend = CreateBackend(config, nullptr);
    ASSERT_TRUE(backend.ok()) << backend.status();
    Entry entry;
    File* file = nullptr;
    ASSERT_EQ((*backend)->Lookup(kRootNode, "f", &entry), 0);
    ASSERT_EQ((*backend)->Open(entry.node, O_RDONLY, &file), 0);
    std::string back(data.size(), '\0');
    IoPath path = IoPath::kNone;
    FileIoRequest request{FileOp::kRead, file, nullptr, back.data(),
                          back.size(),   0,    0,       nullptr};
    ASSERT_EQ((*backend)->RunIo(request, &path), 10000);
    EXPECT_EQ(path, IoPath::kAgentTcp);
    EXPECT_EQ(proxy.flipped(), 1);
    const std::string stats = (*backend)->StatsText();
    if (crc) {
      EXPECT_EQ(back, data);
      EXPECT_NE(stats.find(" retries=1 crc_errors=1 "), std::string::npos)
          << stats;
    } else {
      EXPECT_NE(back, data) << "the flipped byte went unnoticed";
      EXPECT_NE(stats.find(" crc_errors=0 "), std::string::npos) << stats;
    }
    (*backend)->Release(file);
  }
}

// GPU memory as the session hands it over for a mount with agents: the
// fgds module's mapping (Kind::kDevice; host pages here, which O_DIRECT
// reaches the same way) with the dma-buf the session kept.
class DmabufRegion : public MemoryRegion {
 public:
  DmabufRegion(char* base, uint64_t size, int fd)
      : MemoryRegion(base, size, Kind::kDevice, 0), fd_(fd) {}
  int dmabuf_fd() const override { return fd_; }
  uint64_t dmabuf_offset() const override { return 4096; }

 private:
  const int fd_;
};

// What a GPU iov's request needs to come back from the agents' side: the
// same bytes through the local backend's O_DIRECT path, nothing sent to
// the agent, and the reason in the stats.
void ExpectGpuRequestsServedLocally(Backend& backend, const std::string& dir,
                                    const std::string& reason) {
  std::string data(8192, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 13);
  { std::ofstream(dir + "/gpu", std::ios::binary) << data; }
  Entry entry;
  File* file = nullptr;
  ASSERT_EQ(backend.Lookup(kRootNode, "gpu", &entry), 0);
  ASSERT_EQ(backend.Open(entry.node, O_RDWR, &file), 0);
  char* memory = static_cast<char*>(aligned_alloc(4096, 8192));
  ASSERT_NE(memory, nullptr);
  std::memset(memory, 0, 8192);
  const int fd = memfd_create("dmabuf-stand-in", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    DmabufRegion gpu(memory, 8192, fd);
    WaitingCompletion read_done;
    // Device memory always asks for the direct path (as the rings do).
    FileIoRequest read{FileOp::kRead,   file,      &gpu,
                       memory + 4096,   4096,      4096,
                       kIoPreferDirect, &read_done};
    backend.SubmitIo({&read, 1});
    EXPECT_EQ(read_done.Wait(), 4096);
    EXPECT_EQ(read_done.path(), IoPath::kDirect);
    EXPECT_EQ(std::string(memory + 4096, 4096), data.substr(4096));
    std::memset(memory, 'w', 4096);
    IoPath path = IoPath::kNone;
    FileIoRequest write{FileOp::kWrite,  file,   &gpu, memory, 4096, 0,
                        kIoPreferDirect, nullptr};
    EXPECT_EQ(backend.RunIo(write, &path), 4096);
    EXPECT_EQ(path, IoPath::kDirect);
  }
  close(fd);
  free(memory);
  backend.Release(file);
  std::string back(8192, '\0');
  std::ifstream(dir + "/gpu", std::ios::binary).read(back.data(), 8192);
  EXPECT_EQ(back, std::string(4096, 'w') + data.substr(4096));
  const std::string stats = backend.StatsText();
  EXPECT_NE(stats.find(" gpu_fallbacks=2 gpu_fallback_reason=\"" + reason),
            std::string::npos)
      << stats;
}

std::string LastErrorOf(const std::string& stats) {
  const size_t at = stats.find("last_error=\"");
  if (at == std::string::npos) return "";
  const size_t from = at + 12;
  return stats.substr(from, stats.find('"', from) - from);
}

TEST_F(AgentBackendTest, GpuIovsNeverGoToATcpAgentAndTheStatsSayWhy) {
  // No RDMA agent: the session need not keep dma-bufs.
  EXPECT_FALSE(backend_->TakesDmabufs());
  ExpectGpuRequestsServedLocally(*backend_, dir_,
                                 "agent " + server_->address() +
                                     " speaks TCP: GPU iovs move only by RDMA");
  const remote::AgentCounters c = server_->counters();
  EXPECT_EQ(c.reads + c.writes, 0u);
  // The agent is not at fault: still up, no failure counted.
  const std::string stats = backend_->StatsText();
  EXPECT_NE(stats.find("state=up"), std::string::npos) << stats;
  EXPECT_NE(stats.find(" failures=0 "), std::string::npos) << stats;
}

// An rdma:// agent this machine cannot reach (no RDMA device in CI, or a
// build without RDMA): GPU iov requests come back to the local backend's
// DMA path with the agent's reason, as host memory's do.
TEST_F(AgentBackendTest, GpuIovsOfAnRdmaAgentThatIsDownTakeTheLocalPath) {
  const std::string key_file = dir_ + "/key";
  { std::ofstream(key_file) << key_.secret; }
  ASSERT_EQ(chmod(key_file.c_str(), 0600), 0);
  BackendConfig config;
  config.data_dir = dir_;
  config.agents = {remote::AgentAddress(remote::HostPort{"127.0.0.1", 1},
                                        remote::AgentTransport::kRdma)};
  config.agent_key = key_file;
  auto backend = CreateBackend(config, nullptr);
  ASSERT_TRUE(backend.ok()) << backend.status();
  // The first request finds the agent down (its reason in last_error), the
  // second no agent up.
  ExpectGpuRequestsServedLocally(**backend, dir_, "no agent up");
  const std::string stats = (*backend)->StatsText();
  EXPECT_NE(stats.find("state=down"), std::string::npos) << stats;
  EXPECT_NE(LastErrorOf(stats), "") << stats;
  // Never connected, so no registration was tried.
  EXPECT_NE(stats.find(" iov_registrations=0 iov_registration_failures=0 "),
            std::string::npos)
      << stats;
}

// The agent's half of the naming rule (inode_name.h): a checked path whose
// file is not the one named, here because the path now leads to another
// file through a directory swapped for a symlink, is refused before any
// byte moves; the daemon then serves the request from its own descriptor.
TEST(DirStoreTest, ACheckedPathThatNowNamesAnotherFileIsRefused) {
  char dir[] = "/tmp/fgds-dirstore-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string root = dir;
  ASSERT_EQ(mkdir((root + "/mine").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/theirs").c_str(), 0755), 0);
  auto make = [&](const std::string& name) {
    int fd = open((root + "/" + name).c_str(), O_CREAT | O_RDWR, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, "original", 8), 8);
    struct stat st = {};
    fstat(fd, &st);
    close(fd);
    return st.st_ino;
  };
  const ino_t mine = make("mine/f");
  const ino_t theirs = make("theirs/f");
  auto store = remote::DirStore::Open(root);
  ASSERT_TRUE(store.ok()) << store.status();
  // The name the daemon made while "mine" was the caller's directory.
  const std::string name = remote::CheckedPathName(mine, "mine/f");
  EXPECT_EQ((*store)->Write(name, 0, "XX", 2), 2);
  ASSERT_EQ(rename((root + "/mine").c_str(), (root + "/moved").c_str()), 0);
  ASSERT_EQ(symlink("theirs", (root + "/mine").c_str()), 0);
  EXPECT_EQ((*store)->Write(name, 0, "YY", 2), -ESTALE);
  char back[8] = {};
  EXPECT_EQ((*store)->Read(name, 0, back, sizeof(back)), -ESTALE);
  EXPECT_EQ((*store)->Sync(name), -ESTALE);
  // The other file is untouched, and its own checked name still works.
  EXPECT_EQ((*store)->Read(remote::CheckedPathName(theirs, "theirs/f"), 0, back,
                           sizeof(back)),
            8);
  EXPECT_EQ(std::string(back, 8), "original");
  std::filesystem::remove_all(root);
}

TEST(MemoryRegionTest, TheAttachmentIsMadeOnceAndGoesWithTheRegion) {
  struct Counted : MemoryRegion::Attachment {
    explicit Counted(std::atomic<int>* live) : live_(live) { ++*live_; }
    ~Counted() override { --*live_; }
    std::atomic<int>* live_;
  };
  std::atomic<int> live{0};
  int made = 0;
  char memory[64];
  {
    MemoryRegion region(memory, sizeof(memory), MemoryRegion::Kind::kHost, 0);
    auto make = [&] {
      ++made;
      return std::make_unique<Counted>(&live);
    };
    MemoryRegion::Attachment* first = region.Attach(make);
    EXPECT_EQ(region.Attach(make), first);
    EXPECT_EQ(made, 1);
    EXPECT_EQ(live.load(), 1);
  }
  EXPECT_EQ(live.load(), 0);
}

}  // namespace
}  // namespace fgds::backend
