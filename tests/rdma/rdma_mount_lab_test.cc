// The mount over RDMA agents in the rdma lab (run-lab.sh): a real `fgds
// mount` (the local backend, the only one the guest can run: no ceph
// cluster there) with `--agents rdma://...`, and a real `fgds agent
// --transport rdma` serving the same directory (agent_backend.h). POSIX
// reads and writes go through the agent's registered staging buffers,
// usrbio host iovs are registered with the NIC and moved in place; every
// byte is checked against the backing directory, completions must say
// rdma, `/.fgds/stats` must show the agent and its counters, and an agent
// killed mid-I/O must cost nothing but the fallback to the local backend.
// Skips without FGDS_RDMA_LAB_ADDR (no RDMA device: not in the lab).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/file_contents.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
// The guest runs nothing else: a fixed port lets the mount name the agent
// before the agent (which serves the mount's backing directory) starts.
constexpr int kAgentPort = 7471;

std::string RandomBytes(size_t n, unsigned seed) {
  std::string data(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : data) c = static_cast<char>(rng());
  return data;
}

// Writes `data` at 0 in 1 MiB calls, fsyncs.
bool PwriteAll(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (uint64_t done = 0; ok && done < data.size(); done += kMiB) {
    const uint64_t n = std::min<uint64_t>(kMiB, data.size() - done);
    ok = pwrite(fd, data.data() + done, n, static_cast<off_t>(done)) ==
         static_cast<ssize_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

// The kernel's cached pages of the mount go, so reads reach the daemon.
void DropCaches() {
  sync();
  int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd >= 0) {
    (void)!write(fd, "3", 1);
    close(fd);
  }
}

class RdmaMountLabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* addr = getenv("FGDS_RDMA_LAB_ADDR");
    if (addr == nullptr || *addr == '\0') {
      GTEST_SKIP() << "FGDS_RDMA_LAB_ADDR unset: no RDMA device (the rdma "
                      "lab, tests/rdma/run-lab.sh, sets it)";
    }
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    address_ = absl::StrCat(addr, ":", kAgentPort);
    auto keys = MakeTempDir("fgds-rdma-keys.");
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
    key_ = keys_ + "/agent.key";
    {
      int fd = open(key_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ASSERT_GE(fd, 0);
      const std::string key(44, 'k');
      ASSERT_EQ(write(fd, key.data(), key.size()),
                static_cast<ssize_t>(key.size()));
      close(fd);
    }
    MountOptions options;
    options.extra_args = {"--agents", "rdma://" + address_, "--agent-key",
                          key_};
    options.timeout_ms = 60000;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    auto agent =
        AgentProcess::Start({"--transport", "rdma", "--listen", address_,
                             "--data", fs_->backing(), "--key", key_});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
  }
  void TearDown() override {
    if (fs_ != nullptr) (void)fs_->Unmount();
    fs_.reset();
    if (agent_ != nullptr) agent_->Stop(nullptr);
    if (!keys_.empty()) RemoveTree(keys_);
  }

  std::string Stats() { return ReadAll(fs_->mountpoint() + "/.fgds/stats"); }
  // A field of the "# agent rdma://HOST:PORT:" line ("" if none).
  std::string Field(const std::string& field) {
    const std::string stats = Stats();
    const size_t line = stats.find("# agent rdma://" + address_ + ":");
    if (line == std::string::npos) return "";
    const std::string text = stats.substr(line, stats.find('\n', line) - line);
    const size_t at = text.find(" " + field + "=");
    if (at == std::string::npos) return "";
    const size_t from = at + field.size() + 2;
    if (text[from] == '"') {
      return text.substr(from + 1, text.find('"', from + 1) - from - 1);
    }
    return text.substr(from, text.find(' ', from) - from);
  }
  // The agent's whole stats line, for the lab's log.
  std::string AgentLine() {
    const std::string stats = Stats();
    const size_t line = stats.find("# agent rdma://");
    if (line == std::string::npos) return "(no agent line)";
    return stats.substr(line, stats.find('\n', line) - line);
  }
  uint64_t Counter(const std::string& field) {
    const std::string v = Field(field);
    return v.empty() ? ~0ull : std::stoull(v);
  }

  std::string address_;
  std::string keys_, key_;
  std::unique_ptr<MountedFs> fs_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(RdmaMountLabTest, PosixBytesGoThroughTheRdmaAgent) {
  // Written through the mount: the agent writes them into the backing
  // directory, staged (libfuse's buffers are not registered).
  const std::string data = RandomBytes(3 * kMiB + 5, 1);
  ASSERT_TRUE(PwriteAll(fs_->mountpoint() + "/f", data));
  EXPECT_TRUE(ReadAll(fs_->backing() + "/f") == data) << "backing differs";
  EXPECT_EQ(Field("state"), "up") << Stats();
  EXPECT_EQ(Field("path"), "rdma") << Stats();
  EXPECT_EQ(Counter("write_bytes"), data.size()) << Stats();
  EXPECT_GT(Counter("staged"), 0u) << Stats();
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();

  // Read through the mount, cold: written into the backing directory
  // behind the mount's back, then its pages dropped.
  const std::string other = RandomBytes(2 * kMiB + 77, 2);
  ASSERT_TRUE(PwriteAll(fs_->backing() + "/g", other));
  DropCaches();
  EXPECT_TRUE(ReadAll(fs_->mountpoint() + "/g") == other) << "read differs";
  EXPECT_GE(Counter("read_bytes"), other.size()) << Stats();
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();
  fprintf(stderr, "FGDS-RDMA-MOUNT posix: %s\n", AgentLine().c_str());
  EXPECT_EQ(agent_->Stop(nullptr), 0);
  agent_.reset();
}

TEST_F(RdmaMountLabTest, UsrbioHostIovsAreRegisteredAndSayRdma) {
  const std::string path = fs_->mountpoint() + "/u";
  constexpr uint64_t kSize = 6 * kMiB + 3;
  // Made behind the mount: only the ring's requests go to the agent.
  ASSERT_TRUE(PwriteAll(fs_->backing() + "/u", std::string(kSize, '\0')));
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 16 * kMiB);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);

  struct Range {
    uint64_t offset, len;
  };
  const Range writes[] = {{kMiB + 7, 4 * kMiB}, {kSize - 100, 100}};
  uint64_t at = 0;
  for (int w = 0; w < 2; ++w) {
    FillPattern(iov.at(at), writes[w].len, 80 + w, 0);
    ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(at), id,
                              writes[w].offset, writes[w].len, w),
              0);
    at += writes[w].len;
  }
  fgds_cqe cqes[2];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& cqe : cqes) {
    EXPECT_EQ(cqe.result, static_cast<int64_t>(writes[cqe.userdata].len));
    EXPECT_EQ(cqe.path, FGDS_PATH_RDMA) << "write " << cqe.userdata;
  }
  // In the backing file, byte for byte.
  std::string model(kSize, '\0');
  for (int w = 0; w < 2; ++w) {
    std::string piece(writes[w].len, '\0');
    FillPattern(piece.data(), writes[w].len, 80 + w, 0);
    model.replace(writes[w].offset, writes[w].len, piece);
  }
  EXPECT_TRUE(ReadAll(fs_->backing() + "/u") == model) << "backing differs";
  // Read back into other places of the iov.
  at = 8 * kMiB;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(at), id,
                             writes[r].offset, writes[r].len, at),
              0);
    at += writes[r].len;
  }
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& cqe : cqes) {
    const int r = cqe.userdata == 8 * kMiB ? 0 : 1;
    EXPECT_EQ(cqe.result, static_cast<int64_t>(writes[r].len));
    EXPECT_EQ(cqe.path, FGDS_PATH_RDMA) << "read " << r;
    EXPECT_TRUE(MatchesPattern(iov.at(cqe.userdata), writes[r].len, 80 + r, 0))
        << "read " << r << " differs";
  }
  // Four requests in place, one registration of the iov.
  EXPECT_EQ(Counter("in_place"), 4u) << Stats();
  EXPECT_EQ(Counter("iov_registrations"), 1u) << Stats();
  EXPECT_EQ(Counter("iov_registration_failures"), 0u) << Stats();
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();
  fprintf(stderr, "FGDS-RDMA-MOUNT usrbio: %s\n", AgentLine().c_str());
}

// The agent dies (SIGKILL) while a writer and a reader are busy: no call
// fails, the files hold what was written, and the stats say the agent is
// down and how many requests the local backend served instead.
TEST_F(RdmaMountLabTest, AKilledAgentCostsOnlyTheFallback) {
  const std::string data = RandomBytes(2 * kMiB, 4);
  ASSERT_TRUE(PwriteAll(fs_->backing() + "/r", data));
  const std::string writes = RandomBytes(6 * kMiB, 5);
  const std::string mnt = fs_->mountpoint();

  std::atomic<bool> stop{false};
  std::atomic<int> read_errors{0}, reads_done{0};
  std::thread reader([&] {
    while (!stop.load()) {
      int fd = open((mnt + "/r").c_str(), O_RDONLY | O_DIRECT);
      std::string got(data.size(), '\0');
      bool ok = fd >= 0;
      for (uint64_t off = 0; ok && off < data.size(); off += kMiB) {
        ok = pread(fd, got.data() + off, kMiB, static_cast<off_t>(off)) ==
             static_cast<ssize_t>(kMiB);
      }
      if (fd >= 0) close(fd);
      if (!ok || got != data) read_errors.fetch_add(1);
      reads_done.fetch_add(1);
    }
  });
  // The writer rewrites the same bytes pass after pass until stopped, so
  // the kill lands in the middle of a pass.
  std::atomic<int> write_errors{0}, passes_done{0};
  std::atomic<uint64_t> written{0};
  std::thread writer([&] {
    int fd = open((mnt + "/w").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      write_errors.fetch_add(1);
      return;
    }
    while (!stop.load()) {
      for (uint64_t off = 0; off < writes.size(); off += kMiB) {
        if (pwrite(fd, writes.data() + off, kMiB, static_cast<off_t>(off)) !=
            static_cast<ssize_t>(kMiB)) {
          write_errors.fetch_add(1);
        }
        written.fetch_add(kMiB);
      }
      passes_done.fetch_add(1);
    }
    if (fsync(fd) != 0 || close(fd) != 0) write_errors.fetch_add(1);
  });
  // Killed once both are under way through the agent.
  while ((written.load() < 2 * kMiB || reads_done.load() < 1) &&
         write_errors.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(kill(agent_->pid(), SIGKILL), 0);
  fprintf(stderr, "agent killed mid-I/O at %llu bytes written, %d reads\n",
          static_cast<unsigned long long>(written.load()), reads_done.load());
  // Two more whole reads and passes after it, served by the fallback.
  const int reads_at_kill = reads_done.load();
  const int passes_at_kill = passes_done.load();
  while (reads_done.load() < reads_at_kill + 2 ||
         passes_done.load() < passes_at_kill + 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  reader.join();
  writer.join();
  EXPECT_EQ(write_errors.load(), 0);
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_TRUE(ReadAll(fs_->backing() + "/w") == writes) << "backing differs";
  EXPECT_EQ(Field("state"), "down") << Stats();
  EXPECT_GT(Counter("fallbacks"), 0u) << Stats();
  EXPECT_GT(Counter("write_bytes"), 0u) << "the agent never wrote" << Stats();
  EXPECT_GT(Counter("read_bytes"), 0u) << "the agent never read" << Stats();
  EXPECT_FALSE(Field("last_error").empty()) << Stats();
  fprintf(stderr, "after the kill: %s\n", AgentLine().c_str());
}

}  // namespace
}  // namespace fgds::testing
