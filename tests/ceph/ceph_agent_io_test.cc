// A ceph mount with storage-side agents (`fgds mount --agents`,
// docs/agent.md): file data of POSIX and usrbio reads and writes goes to a
// real `fgds agent --ceph-conf` over TCP, checked byte for byte, with the
// path each usrbio completion reports (tcp) and the per-agent counters of
// /.fgds/stats; what the agent writes is what another client of the file
// system reads, and the other way round; an agent killed mid-run, or one
// that holds another key, costs nothing but the fallback to the daemon's
// own libcephfs, and the stats say why.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/file_contents.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

const auto* const env =
    ::testing::AddGlobalTestEnvironment(new CephClusterEnvironment);

std::string RandomBytes(size_t n, unsigned seed) {
  std::string data(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : data) c = static_cast<char>(rng());
  return data;
}

// Writes `data` at `offset` in 1 MiB calls (as applications do), fsyncs.
bool PwriteAll(const std::string& path, const std::string& data,
               uint64_t offset, bool truncate) {
  int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (uint64_t done = 0; ok && done < data.size(); done += kMiB) {
    const uint64_t n = std::min<uint64_t>(kMiB, data.size() - done);
    ok = pwrite(fd, data.data() + done, n, static_cast<off_t>(offset + done)) ==
         static_cast<ssize_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

// A field of the "# agent HOST:PORT:" line of /.fgds/stats ("" if none).
std::string AgentField(const std::string& mountpoint, const std::string& agent,
                       const std::string& field) {
  const std::string stats = ReadAll(mountpoint + "/.fgds/stats");
  const size_t line = stats.find("# agent " + agent + ":");
  if (line == std::string::npos) return "";
  const size_t end = stats.find('\n', line);
  const std::string text = stats.substr(line, end - line);
  const size_t at = text.find(" " + field + "=");
  if (at == std::string::npos) return "";
  size_t from = at + field.size() + 2;
  if (text[from] == '"') {
    return text.substr(from + 1, text.rfind('"') - from - 1);
  }
  return text.substr(from, text.find(' ', from) - from);
}
uint64_t AgentCounter(const std::string& mountpoint, const std::string& agent,
                      const std::string& field) {
  const std::string v = AgentField(mountpoint, agent, field);
  return v.empty() ? ~0ull : std::stoull(v);
}

// CephTest's mount (fs_, no agents: "another client" of the file system),
// an agent serving the whole file system, and a second mount that sends
// file data to it (agent_fs_, its directory agent_dir_ = dir_ seen there).
class CephAgentIoTest : public CephTest {
 protected:
  void SetUp() override {
    CephTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Keys live outside the file system: the agent and the daemon read
    // them before they serve it.
    auto keys = MakeTempDir("fgds-agent-keys.");
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
    key_ = keys_ + "/agent.key";
    ASSERT_TRUE(WriteAgentKey(key_, 'k'));
    StartAgent(key_);
    ASSERT_NO_FATAL_FAILURE(MountWithAgents(key_));
  }
  void TearDown() override {
    if (agent_fs_ != nullptr) (void)agent_fs_->Unmount();
    agent_fs_.reset();
    if (agent_ != nullptr) agent_->Stop(nullptr);
    if (!keys_.empty()) RemoveTree(keys_);
  }

  void StartAgent(const std::string& key) {
    auto agent = AgentProcess::Start({"--listen", "127.0.0.1:0", "--ceph-conf",
                                      ceph_cluster->conf, "--key", key});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
  }
  void MountWithAgents(const std::string& key) {
    MountOptions options;
    options.extra_args = {"--backend",        "ceph",     "--ceph-conf",
                          ceph_cluster->conf, "--agents", agent_->address(),
                          "--agent-key",      key};
    options.timeout_ms = 40000;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    agent_fs_ = *std::move(fs);
    agent_dir_ = absl::StrCat(agent_fs_->mountpoint(), "/", name_);
  }
  uint64_t Counter(const std::string& field) {
    return AgentCounter(agent_fs_->mountpoint(), agent_->address(), field);
  }
  std::string Stats() {
    return ReadAll(agent_fs_->mountpoint() + "/.fgds/stats");
  }

  std::string keys_;  // a local directory for the key files
  std::string key_;
  std::unique_ptr<AgentProcess> agent_;
  std::unique_ptr<MountedFs> agent_fs_;
  std::string agent_dir_;
};

TEST_F(CephAgentIoTest, PosixDataGoesThroughTheAgentByteForByte) {
  // 9 MiB + 5: three objects, the last one short.
  std::string data = RandomBytes(9 * kMiB + 5, 1);
  ASSERT_TRUE(PwriteAll(agent_dir_ + "/f", data, 0, true));
  EXPECT_GE(Counter("writes"), 10u) << Stats();
  EXPECT_EQ(Counter("write_bytes"), data.size()) << Stats();
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();

  // Through the agent again (every open drops the kernel's pages), and
  // through the other client, which never saw the agent's writes.
  const uint64_t reads_before = Counter("read_bytes");
  EXPECT_TRUE(ReadAll(agent_dir_ + "/f") == data) << "agent mount differs";
  EXPECT_GE(Counter("read_bytes") - reads_before, data.size()) << Stats();
  EXPECT_TRUE(ReadAll(dir_ + "/f") == data) << "the other client differs";

  // The other client writes (no fsync, the file still open there: its
  // libcephfs buffers the bytes); the agent's read must see them (Ceph
  // revokes the other client's buffering caps before the agent's open).
  int fd = open((dir_ + "/f").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  const std::string patch = RandomBytes(100000, 2);
  ASSERT_EQ(pwrite(fd, patch.data(), patch.size(), 4 * kMiB - 7),
            static_cast<ssize_t>(patch.size()));
  data.replace(4 * kMiB - 7, patch.size(), patch);
  EXPECT_TRUE(ReadAll(agent_dir_ + "/f") == data)
      << "the agent did not see the other client's buffered write";
  close(fd);

  // A second write through the agent: both mounts read it at their next
  // open.
  const std::string patch2 = RandomBytes(5000, 3);
  ASSERT_TRUE(PwriteAll(agent_dir_ + "/f", patch2, 8 * kMiB + 1, false));
  data.replace(8 * kMiB + 1, patch2.size(), patch2);
  EXPECT_TRUE(ReadAll(dir_ + "/f") == data) << "other client misses patch2";
  EXPECT_TRUE(ReadAll(agent_dir_ + "/f") == data) << "agent misses patch2";
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();

  // Renamed while open elsewhere: the agent names files by inode number.
  ASSERT_EQ(rename((dir_ + "/f").c_str(), (dir_ + "/g").c_str()), 0);
  EXPECT_TRUE(ReadAll(agent_dir_ + "/g") == data);
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();
}

TEST_F(CephAgentIoTest, UsrbioHostIovCompletionsSayTcp) {
  const std::string path = agent_dir_ + "/u";
  constexpr uint64_t kSize = 10 * kMiB + 3;
  {
    std::string zeros(kSize, '\0');
    ASSERT_TRUE(PwriteAll(path, zeros, 0, true));
  }
  Session s(agent_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 24 * kMiB);
  ASSERT_EQ(iov.result, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);

  // A write across two object boundaries (split into pieces, each to the
  // agent of its object) and a small unaligned one.
  struct Range {
    uint64_t offset, len;
  };
  const Range writes[] = {{3 * kMiB + 7, 6 * kMiB}, {kSize - 100, 100}};
  uint64_t at = 0;
  for (int w = 0; w < 2; ++w) {
    FillPattern(iov.at(at), writes[w].len, 70 + w, 0);
    ASSERT_EQ(fgds_prep_write(&ior.ior, &iov.iov, iov.at(at), id,
                              writes[w].offset, writes[w].len, w),
              0);
    at += writes[w].len;
  }
  fgds_cqe cqes[2];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& cqe : cqes) {
    EXPECT_EQ(cqe.result, static_cast<int64_t>(writes[cqe.userdata].len));
    EXPECT_EQ(cqe.path, FGDS_PATH_TCP) << "write " << cqe.userdata;
  }
  // Read both back into other places of the iov.
  at = 12 * kMiB;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(at), id,
                             writes[r].offset, writes[r].len, at),
              0);
    at += writes[r].len;
  }
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& cqe : cqes) {
    const int r = cqe.userdata == 12 * kMiB ? 0 : 1;
    EXPECT_EQ(cqe.result, static_cast<int64_t>(writes[r].len));
    EXPECT_EQ(cqe.path, FGDS_PATH_TCP) << "read " << r;
    EXPECT_TRUE(MatchesPattern(iov.at(cqe.userdata), writes[r].len, 70 + r, 0))
        << "read " << r << " differs";
  }
  // The other client reads what the agent wrote.
  std::string model(kSize, '\0');
  for (int w = 0; w < 2; ++w) {
    std::string piece(writes[w].len, '\0');
    FillPattern(piece.data(), writes[w].len, 70 + w, 0);
    model.replace(writes[w].offset, writes[w].len, piece);
  }
  EXPECT_TRUE(ReadAll(dir_ + "/u") == model) << "the other client differs";
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();
}

// The agent dies (SIGKILL) while a writer and a reader are busy: no read
// or write call fails and the reads are right; the writes the agent had
// acknowledged but not synced die with it, which the writer's fsync
// reports (EIO, never a silent success), so the writer writes again and
// that fsync succeeds; the stats say the agent is down and how many
// requests went to libcephfs instead.
TEST_F(CephAgentIoTest, AKilledAgentCostsOnlyTheFallback) {
  const std::string data = RandomBytes(16 * kMiB, 4);
  ASSERT_TRUE(PwriteAll(agent_dir_ + "/r", data, 0, true));
  const std::string writes = RandomBytes(24 * kMiB, 5);

  std::atomic<bool> stop{false};
  std::atomic<int> read_errors{0}, reads_done{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (ReadAll(agent_dir_ + "/r") != data) read_errors.fetch_add(1);
      reads_done.fetch_add(1);
    }
  });
  std::atomic<int> write_errors{0};
  std::atomic<int> first_fsync_errno{-1};
  std::atomic<uint64_t> written{0};
  // The writer's first fsync waits for the kill: on a loaded machine the
  // writer could otherwise write and sync everything before this thread
  // gets to kill, and an fsync that rightly succeeds would fail the test.
  std::atomic<bool> killed{false};
  std::thread writer([&] {
    int fd =
        open((agent_dir_ + "/w").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      write_errors.fetch_add(1);
      return;
    }
    auto write_all = [&] {
      for (uint64_t off = 0; off < writes.size(); off += kMiB) {
        if (pwrite(fd, writes.data() + off, kMiB, static_cast<off_t>(off)) !=
            static_cast<ssize_t>(kMiB)) {
          write_errors.fetch_add(1);
        }
        written.store(off + kMiB);
      }
    };
    write_all();
    while (!killed.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    first_fsync_errno = fsync(fd) == 0 ? 0 : errno;
    write_all();  // as an application does after a failed fsync
    if (fsync(fd) != 0 || close(fd) != 0) write_errors.fetch_add(1);
  });
  // Kill it once the writer is under way (the reader loops meanwhile).
  while (written.load() < 2 * kMiB && write_errors.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const uint64_t written_at_kill = written.load();
  const int kill_rc = kill(agent_->pid(), SIGKILL);
  killed = true;
  EXPECT_EQ(kill_rc, 0);
  // The dead agent was a CephFS client holding capabilities on the files
  // it served: as for any dead client, the MDS makes others wait for them
  // until the session is evicted (by an operator, or after
  // session_timeout); the daemon's fallback is one of those others.
  EXPECT_TRUE(EvictCephSession(ceph_cluster->conf, agent_->pid()));
  writer.join();
  // A few reads after the kill too.
  const int reads_at_kill = reads_done.load();
  while (reads_done.load() < reads_at_kill + 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(write_errors.load(), 0);
  EXPECT_EQ(first_fsync_errno.load(), EIO)
      << "the agent died holding acknowledged, unsynced writes ("
      << written_at_kill << " bytes written before the kill)" << Stats();
  EXPECT_GE(Counter("sync_errors"), 1u) << Stats();
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_TRUE(ReadAll(agent_dir_ + "/w") == writes) << "agent mount";
  EXPECT_TRUE(ReadAll(dir_ + "/w") == writes) << "the other client";
  EXPECT_EQ(AgentField(agent_fs_->mountpoint(), agent_->address(), "state"),
            "down")
      << Stats();
  EXPECT_GT(Counter("fallbacks"), 0u) << Stats();
  EXPECT_FALSE(
      AgentField(agent_fs_->mountpoint(), agent_->address(), "last_error")
          .empty())
      << Stats();
  std::string out;
  agent_->Stop(&out);
  agent_.reset();
}

// Small writes are acknowledged by the agent without a sync each; the
// file's fsync syncs them on the agent before it returns: an agent killed
// right after loses nothing, as another client then reads. (Without that
// sync the agent's client would have held the bytes in its buffers, and
// they would have died with it.)
TEST_F(CephAgentIoTest, AfterFsyncAKilledAgentLosesNothing) {
  const std::string path = agent_dir_ + "/d";
  std::string model = RandomBytes(2 * kMiB, 6);
  ASSERT_TRUE(PwriteAll(path, model, 0, true));
  const uint64_t syncs_before = Counter("syncs");
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const uint64_t off = (rng() % (2 * kMiB / 4096)) * 4096;
    const std::string piece = RandomBytes(4096, 100 + i);
    ASSERT_EQ(pwrite(fd, piece.data(), piece.size(), static_cast<off_t>(off)),
              4096);
    model.replace(off, piece.size(), piece);
  }
  EXPECT_EQ(Counter("syncs"), syncs_before) << "synced before fsync" << Stats();
  ASSERT_EQ(fsync(fd), 0) << strerror(errno);
  EXPECT_GT(Counter("syncs"), syncs_before) << Stats();
  EXPECT_EQ(Counter("sync_errors"), 0u) << Stats();
  EXPECT_EQ(Counter("fallbacks"), 0u) << Stats();
  ASSERT_EQ(kill(agent_->pid(), SIGKILL), 0);
  EXPECT_TRUE(EvictCephSession(ceph_cluster->conf, agent_->pid()));
  EXPECT_EQ(close(fd), 0) << "nothing was written after the fsync";
  EXPECT_TRUE(ReadAll(dir_ + "/d") == model)
      << "the other client misses writes fsync said were durable";
  std::string out;
  agent_->Stop(&out);
  agent_.reset();
}

// An agent that holds another key: the daemon refuses it (the agent
// proves first), serves everything itself, and says why in the stats.
TEST_F(CephAgentIoTest, AWrongKeyFallsBackWithTheReason) {
  (void)agent_fs_->Unmount();
  agent_fs_.reset();
  const std::string other = keys_ + "/other.key";
  ASSERT_TRUE(WriteAgentKey(other, 'o'));
  ASSERT_NO_FATAL_FAILURE(MountWithAgents(other));

  const std::string data = RandomBytes(5 * kMiB + 1, 6);
  ASSERT_TRUE(PwriteAll(agent_dir_ + "/k", data, 0, true));
  EXPECT_TRUE(ReadAll(agent_dir_ + "/k") == data);
  EXPECT_TRUE(ReadAll(dir_ + "/k") == data);
  EXPECT_EQ(Counter("writes"), 0u) << Stats();
  EXPECT_EQ(Counter("reads"), 0u) << Stats();
  EXPECT_GT(Counter("fallbacks"), 0u) << Stats();
  const std::string why =
      AgentField(agent_fs_->mountpoint(), agent_->address(), "last_error");
  EXPECT_NE(why.find("cluster key"), std::string::npos) << Stats();
}

// Bad --agents never reach a mount: the real daemon exits saying why
// (before it connects to the cluster, or right after, for the key file).
TEST(CephAgentOptionsTest, BadAgentsAreRefused) {
  if (ceph_cluster->conf.empty()) GTEST_SKIP() << ceph_cluster->skip_reason;
  auto dir = MakeTempDir("fgds-agent-options.");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string open_key = *dir + "/open.key";
  ASSERT_TRUE(WriteAgentKey(open_key, 'k'));
  ASSERT_EQ(chmod(open_key.c_str(), 0644), 0);
  ASSERT_EQ(mkdir((*dir + "/mnt").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((*dir + "/data").c_str(), 0755), 0);
  struct Case {
    std::string args;
    const char* says;
  };
  const Case cases[] = {
      {"--agents 127.0.0.1 --agent-key /nonexistent", "no port"},
      {"--agents 127.0.0.1:7070,,127.0.0.1:7071 --agent-key /x", "--agents"},
      {"--agents 127.0.0.1:7070", "needs --agent-key"},
      {"--agents 127.0.0.1:7070 --agent-key " + *dir + "/missing",
       "--agent-key"},
      {"--agents 127.0.0.1:7070 --agent-key " + open_key, "--agent-key"},
  };
  for (const Case& c : cases) {
    const std::string command =
        absl::StrCat(FgdsBinary(), " mount -f --backend ceph --ceph-conf ",
                     ceph_cluster->conf, " --data ", *dir, "/data ", c.args,
                     " ", *dir, "/mnt 2>&1");
    FILE* p = popen(command.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0)
        << c.args << ": " << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << c.args << ": " << out;
  }
  RemoveTree(*dir);
}

}  // namespace
}  // namespace fgds::testing
