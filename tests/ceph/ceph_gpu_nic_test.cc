// GPU iovs of a ceph mount with an rdma:// agent (docs/usrbio.md, "GPU
// iovs over RDMA"): the daemon keeps the client's dma-buf for the NIC,
// maps nothing, and answers DIRECT; each entry goes to the agents, and
// what no agent moves comes back "bounce this entry", which libfgds runs
// through the iov's staging, so the caller sees one completion (path
// BOUNCE) with the right bytes.
//
// What runs here (no RDMA device, no GPU): fake device memory
// (FakeDeviceOps) whose "dma-buf" is a memfd, which the daemon must take
// like any descriptor and leave to the NIC to refuse; the rdma:// agent
// cannot connect (no RDMA device), so every entry bounces, checked by
// content, and the stats count it. With --agent-crc the answer is "for
// good" and the iov turns BOUNCE. Also: another user's session cannot name
// the iov, and a user without room for one more registered file, or a
// daemon without address space for the iov's reservation, gets BOUNCE
// with a reason. Not run anywhere: a NIC registering a GPU's
// dma-buf and an agent moving its bytes in place.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/integration/usrbio_gpu_harness.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/file_contents.h"
#include "tests/lib/proc_status.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr char kPci[] = "0000:3b:00.0";
// No agent listens there, and there is no RDMA device here: the link
// cannot connect, so no agent is ever up for GPU memory.
constexpr char kRdmaAgent[] = "rdma://127.0.0.1:9";

const auto* const env =
    ::testing::AddGlobalTestEnvironment(new CephClusterEnvironment);

// A field of the "# agents:" line of /.fgds/stats (~0 if none).
uint64_t AgentsCounter(const std::string& mountpoint,
                       const std::string& field) {
  const std::string stats = ReadAll(mountpoint + "/.fgds/stats");
  const size_t line = stats.find("# agents:");
  if (line == std::string::npos) return ~0ull;
  const std::string text = stats.substr(line, stats.find('\n', line) - line);
  const size_t at = text.find(" " + field + "=");
  if (at == std::string::npos) return ~0ull;
  return std::stoull(text.substr(at + field.size() + 2));
}

bool WritePatternFile(const std::string& path, uint64_t size, uint64_t seed) {
  std::vector<char> data(size);
  FillPattern(data.data(), size, seed, 0);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) return false;
  bool ok = pwrite(fd, data.data(), size, 0) == static_cast<ssize_t>(size);
  ok = ok && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

// `bytes` of fake device memory at a page-aligned address, as GPU
// allocations are (only aligned entries try the direct way).
uint64_t AllocAligned(direct::FakeDeviceOps* ops, uint64_t bytes) {
  return (ops->Alloc(bytes + 4096) + 4095) & ~uint64_t{4095};
}

// A read of the first MiB of registered file `id` (pattern `seed`) into
// the GPU iov at `dev` comes back BOUNCE with the file's bytes.
void ExpectTheFirstMiBBounces(fgds_session* s, fgds_iov* iov, uint64_t dev,
                              int id, uint64_t seed) {
  Ior ior(s);
  ASSERT_EQ(ior.result, 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, iov, reinterpret_cast<void*>(dev), id, 0,
                           kMiB, 1),
            0);
  fgds_cqe cqe;
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
  EXPECT_EQ(cqe.result, static_cast<int64_t>(kMiB));
  EXPECT_EQ(cqe.path, FGDS_PATH_BOUNCE);
  EXPECT_TRUE(MatchesPattern(reinterpret_cast<char*>(dev), kMiB, seed, 0));
}

// CephTest's mount (no agents) and a second one of the same file system
// with an rdma:// agent (gpu_fs_; the test's directory is gpu_dir_ there).
class CephGpuNicTest : public CephTest {
 protected:
  void SetUp() override {
    CephTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto keys = MakeTempDir("fgds-agent-keys.");
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
    key_ = keys_ + "/agent.key";
    ASSERT_TRUE(WriteAgentKey(key_, 'k'));
    ops_.FakeDmaBufExport(kPci);
  }
  void TearDown() override {
    if (gpu_fs_ != nullptr) (void)gpu_fs_->Unmount();
    gpu_fs_.reset();
    if (!keys_.empty()) RemoveTree(keys_);
  }

  // `agents`: --agents' value (default: the rdma:// one alone).
  void Mount(std::vector<std::string> more = {},
             const std::string& agents = kRdmaAgent) {
    MountOptions options;
    options.extra_args = {"--backend",        "ceph",     "--ceph-conf",
                          ceph_cluster->conf, "--agents", agents,
                          "--agent-key",      key_};
    for (std::string& arg : more) options.extra_args.push_back(std::move(arg));
    options.timeout_ms = 40000;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    gpu_fs_ = *std::move(fs);
    gpu_dir_ = absl::StrCat(gpu_fs_->mountpoint(), "/", name_);
  }
  uint64_t Counter(const std::string& field) {
    return AgentsCounter(gpu_fs_->mountpoint(), field);
  }

  std::string keys_, key_;
  std::unique_ptr<MountedFs> gpu_fs_;
  std::string gpu_dir_;
  direct::FakeDeviceOps ops_;
};

// Registration answers DIRECT (the memfd kept for the NIC, no mapping),
// and every entry, reads and writes of several sizes and shapes, some cut
// at the file's 4 MiB objects, comes back BOUNCE with the right bytes:
// the daemon answered each "bounce this entry" and the library staged it.
TEST_F(CephGpuNicTest, DirectIovEntriesBounceByContent) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  const std::string path = gpu_dir_ + "/data";
  constexpr uint64_t kSize = 10 * kMiB + 123;
  ASSERT_TRUE(WritePatternFile(path, kSize, 41));
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = AllocAligned(&ops_, 16 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 16 * kMiB, 4 * kMiB, kMiB);
  ASSERT_EQ(g.result, 0);
  uint32_t reason = 99;
  ASSERT_EQ(fgds_iov_gpu_path(&g.iov, &reason),
            static_cast<int>(FGDS_PATH_DIRECT));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_NONE);
  // The reply said which DIRECT (FGDS_IOV_GPU_DIRECT_NIC_ONLY): the
  // library sends the entries through its stager, the only way that can
  // re-issue a "bounce this entry" (a mapped iov's go to the ring as is).
  EXPECT_TRUE(usrbio::gpu::GpuOf(&g.iov)->nic_only);
  const int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0) << strerror(-id);
  char* base = reinterpret_cast<char*>(dev);
  const uint64_t bounced_before = Counter("gpu_bounced");

  struct Shape {
    uint64_t dev_offset, file_offset, len;
  };
  // Aligned (direct first, then bounced), across objects, unaligned
  // (staged at once), past the end of the file.
  const Shape reads[] = {{0, 0, 4096},
                         {kMiB, 4 * kMiB, kMiB},
                         {2 * kMiB, 2 * kMiB, 5 * kMiB},
                         {8 * kMiB + 3, 77, 100000},
                         {12 * kMiB, 8 * kMiB, 4 * kMiB}};
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  uint64_t aligned = 0;
  for (size_t i = 0; i < std::size(reads); ++i) {
    const Shape& r = reads[i];
    ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, base + r.dev_offset, id,
                             r.file_offset, r.len, i),
              0);
    if ((r.dev_offset | r.file_offset | r.len) % 4096 == 0) ++aligned;
  }
  std::vector<fgds_cqe> cqes(std::size(reads));
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes.data(), cqes.size()),
            static_cast<int>(cqes.size()));
  for (const fgds_cqe& c : cqes) {
    const Shape& r = reads[c.userdata];
    const uint64_t want = std::min(r.len, kSize - r.file_offset);
    EXPECT_EQ(c.result, static_cast<int64_t>(want)) << c.userdata;
    EXPECT_EQ(c.path, FGDS_PATH_BOUNCE) << c.userdata;
    EXPECT_TRUE(MatchesPattern(base + r.dev_offset, want, 41, r.file_offset))
        << c.userdata;
  }
  // Only the aligned entries went direct first, and each bounced once.
  EXPECT_EQ(Counter("gpu_bounced") - bounced_before, aligned);
  EXPECT_GE(Counter("gpu_fallbacks"), aligned);
  EXPECT_EQ(Counter("gpu_bounced_for_good"), 0u);

  // Writes, aligned (one across two objects) and not.
  FillPattern(base, 6 * kMiB, 42, 0);
  const Shape writes[] = {{0, 0, 8192},
                          {kMiB, 3 * kMiB, 2 * kMiB},
                          {5 * kMiB + 5, 9 * kMiB + 1, 65536}};
  for (size_t i = 0; i < std::size(writes); ++i) {
    const Shape& w = writes[i];
    ASSERT_EQ(fgds_prep_write(&ior.ior, &g.iov, base + w.dev_offset, id,
                              w.file_offset, w.len, 10 + i),
              0);
  }
  std::vector<fgds_cqe> wcqes(std::size(writes));
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, wcqes.data(), wcqes.size()),
            static_cast<int>(wcqes.size()));
  for (const fgds_cqe& c : wcqes) {
    EXPECT_EQ(c.result, static_cast<int64_t>(writes[c.userdata - 10].len));
    EXPECT_EQ(c.path, FGDS_PATH_BOUNCE);
  }
  // What another client of the file system reads.
  const std::string back = ReadAll(dir_ + "/data");
  ASSERT_EQ(back.size(), kSize);
  std::vector<char> want(kSize);
  FillPattern(want.data(), kSize, 41, 0);
  for (const Shape& w : writes) {
    FillPattern(want.data() + w.file_offset, w.len, 42, w.dev_offset);
  }
  EXPECT_TRUE(std::equal(want.begin(), want.end(), back.begin()));
  // Not "for good": the iov is still direct.
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
}

// --agent-crc: agents' payloads are summed by the CPU, which cannot read
// GPU memory, so no entry of the iov will ever move by an agent: the first
// entry comes back "bounce, for good", the iov turns BOUNCE (MAP_FAILED),
// and later entries go to the staging without asking the daemon first.
TEST_F(CephGpuNicTest, CheckedPayloadsBounceTheIovForGood) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--agent-crc"}));
  const std::string path = gpu_dir_ + "/crc";
  ASSERT_TRUE(WritePatternFile(path, 4 * kMiB, 43));
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = AllocAligned(&ops_, 4 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 4 * kMiB);
  ASSERT_EQ(g.result, 0);
  ASSERT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
  const int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0);
  char* base = reinterpret_cast<char*>(dev);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  for (uint64_t round = 0; round < 3; ++round) {
    ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, base + round * kMiB, id,
                             round * kMiB, kMiB, round),
              0);
    fgds_cqe cqe;
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, &cqe, 1), 1);
    EXPECT_EQ(cqe.result, static_cast<int64_t>(kMiB));
    EXPECT_EQ(cqe.path, FGDS_PATH_BOUNCE);
    EXPECT_TRUE(MatchesPattern(base + round * kMiB, kMiB, 43, round * kMiB));
    uint32_t reason = 0;
    EXPECT_EQ(fgds_iov_gpu_path(&g.iov, &reason),
              static_cast<int>(FGDS_PATH_BOUNCE));
    EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_MAP_FAILED);
  }
  // Asked once: the later rounds never went to the daemon's direct id.
  EXPECT_EQ(Counter("gpu_bounced"), 1u);
  EXPECT_EQ(Counter("gpu_bounced_for_good"), 1u);
}

// Mixed agents: a real TCP agent beside the rdma:// one. GPU memory goes
// to whichever agent the usual choice picks; the TCP one refuses it at
// once (the CPU cannot copy GPU memory into a socket), so those entries
// bounce too, and the stats say why. Host memory still goes to the TCP
// agent.
TEST_F(CephGpuNicTest, ATcpAgentRefusesGpuMemoryAndTheEntryBounces) {
  auto agent = AgentProcess::Start({"--listen", "127.0.0.1:0", "--ceph-conf",
                                    ceph_cluster->conf, "--key", key_});
  ASSERT_TRUE(agent.ok()) << agent.status();
  ASSERT_NO_FATAL_FAILURE(
      Mount({}, absl::StrCat(kRdmaAgent, ",", (*agent)->address())));
  const std::string path = gpu_dir_ + "/mixed";
  ASSERT_TRUE(WritePatternFile(path, 8 * kMiB, 46));
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = AllocAligned(&ops_, 8 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 8 * kMiB);
  ASSERT_EQ(g.result, 0);
  ASSERT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
  const int id = RegisterPath(&s.s, path, O_RDWR);
  ASSERT_GE(id, 0);
  Ior ior(&s.s);
  ASSERT_EQ(ior.result, 0);
  char* base = reinterpret_cast<char*>(dev);
  // One entry per object (objects spread over the agents that are up),
  // in rounds until the TCP agent has refused some: the rdma:// one is
  // down (no RDMA device) from its first try for 2 s, so within two rounds
  // every entry goes to the TCP agent.
  const std::string tcp = (*agent)->address();
  std::string tcp_line;
  uint64_t rounds = 0;
  do {
    memset(base, 0, 8 * kMiB);
    for (uint64_t i = 0; i < 2; ++i) {
      ASSERT_EQ(fgds_prep_read(&ior.ior, &g.iov, base + i * 4 * kMiB, id,
                               i * 4 * kMiB, 4 * kMiB, i),
                0);
    }
    fgds_cqe cqes[2];
    ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
    for (const fgds_cqe& c : cqes) {
      EXPECT_EQ(c.result, static_cast<int64_t>(4 * kMiB));
      EXPECT_EQ(c.path, FGDS_PATH_BOUNCE);
    }
    EXPECT_TRUE(MatchesPattern(base, 8 * kMiB, 46, 0));
    ++rounds;
    const std::string stats = ReadAll(gpu_fs_->mountpoint() + "/.fgds/stats");
    const size_t at = stats.find("# agent " + tcp + ":");
    ASSERT_NE(at, std::string::npos) << stats;
    tcp_line = stats.substr(at, stats.find('\n', at) - at);
  } while (rounds < 4 && tcp_line.find(" fallbacks=0 ") != std::string::npos);
  EXPECT_EQ(tcp_line.find(" fallbacks=0 "), std::string::npos) << tcp_line;
  EXPECT_EQ(Counter("gpu_bounced"), 2 * rounds);
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
  (void)gpu_fs_->Unmount();
  gpu_fs_.reset();
  (*agent)->Stop(nullptr);
}

// Iov ids are the session's: another user's session naming this one's
// direct id reaches nothing (the entry fails, nothing is read).
TEST_F(CephGpuNicTest, AnotherUserCannotUseTheIov) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  absl::StatusOr<TestUser> bob = EnsureTestUser(kBob);
  ASSERT_TRUE(bob.ok()) << bob.status();
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  const std::string path = gpu_dir_ + "/shared";
  ASSERT_TRUE(WritePatternFile(path, kMiB, 44));
  ASSERT_EQ(chmod((dir_ + "/shared").c_str(), 0666), 0);
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = AllocAligned(&ops_, kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, kMiB);
  ASSERT_EQ(g.result, 0);
  ASSERT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
  const uint32_t direct_id = usrbio::gpu::GpuOf(&g.iov)->direct_id;
  const std::string mnt = gpu_fs_->mountpoint();
  const int status = RunAsUser(*bob, [&] {
    Session b(mnt);
    if (b.open_result != 0) return 1;
    const int fid = RegisterPath(&b.s, path, O_RDONLY);
    if (fid < 0) return 2;
    std::vector<char> buf(kMiB);
    // An iov of bob's own making that names the other session's id.
    fgds_iov forged = {};
    forged.base = buf.data();
    forged.size = buf.size();
    forged.id = direct_id;
    forged.memfd = -1;
    forged.session = &b.s;
    Ior ior(&b.s);
    if (ior.result != 0) return 3;
    if (fgds_prep_read(&ior.ior, &forged, buf.data(), fid, 0, 4096, 1) != 0) {
      return 4;
    }
    fgds_cqe cqe;
    if (SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1) return 5;
    return cqe.result == -EINVAL ? 0 : 6;
  });
  EXPECT_EQ(status, 0);
  // And the owner's iov is untouched: still direct, still serving.
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_DIRECT));
}

// The kept descriptor is one registered file of the user's: with none
// left (--user-files), the iov is BOUNCE with a reason, and still works.
TEST_F(CephGpuNicTest, NoRoomForTheDescriptorMeansBounce) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--user-files", "16"}));
  const std::string path = gpu_dir_ + "/full";
  ASSERT_TRUE(WritePatternFile(path, kMiB, 45));
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  std::vector<int> ids;
  for (int i = 0; i < 16; ++i) {
    const int id = RegisterPath(&s.s, path, O_RDONLY);
    ASSERT_GE(id, 0) << i;
    ids.push_back(id);
  }
  const uint64_t dev = AllocAligned(&ops_, kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, kMiB);
  ASSERT_EQ(g.result, 0);
  uint32_t reason = 0;
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, &reason),
            static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_REFUSED);
  ExpectTheFirstMiBBounces(&s.s, &g.iov, dev, ids[0], 45);
}

// No address space left in the daemon for the iov's reservation (its
// RLIMIT_AS, lowered to a little above what it uses, stands in for a full
// address space): the registration answers BOUNCE, reason REFUSED, the
// entries bounce with the right bytes, and what it had charged comes back.
// Limits that hold one such iov (one kept descriptor beside the registered
// file, bytes for one reservation and two stagings) take a second one as
// DIRECT once the limit is lifted; a leaked charge would refuse it.
TEST_F(CephGpuNicTest, NoAddressSpaceForTheReservationMeansBounce) {
  constexpr uint64_t kIovBytes = 256 * kMiB;
  ASSERT_NO_FATAL_FAILURE(Mount({"--user-files", "2", "--user-bytes", "300M"}));
  const std::string path = gpu_dir_ + "/full";
  ASSERT_TRUE(WritePatternFile(path, kMiB, 46));
  Session s(gpu_fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const int id = RegisterPath(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0) << strerror(-id);
  const uint64_t dev = AllocAligned(&ops_, kIovBytes);

  const pid_t daemon = gpu_fs_->daemon_pid();
  rlimit saved = {};
  ASSERT_EQ(prlimit(daemon, RLIMIT_AS, nullptr, &saved), 0);
  // Room for the staging's mapping and the daemon's own needs (a new
  // malloc arena reserves 64 MiB), not for the reservation.
  const rlimit lowered = {ProcStatusBytes(daemon, "VmSize") + 128 * kMiB,
                          saved.rlim_max};
  ASSERT_EQ(prlimit(daemon, RLIMIT_AS, &lowered, nullptr), 0);
  auto g = std::make_unique<FakeGpuIov>(&s.s, &ops_, dev, kIovBytes);
  ASSERT_EQ(prlimit(daemon, RLIMIT_AS, &saved, nullptr), 0);
  ASSERT_EQ(g->result, 0);
  uint32_t reason = 0;
  EXPECT_EQ(fgds_iov_gpu_path(&g->iov, &reason),
            static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_REFUSED);
  ExpectTheFirstMiBBounces(&s.s, &g->iov, dev, id, 46);
  g.reset();
  FakeGpuIov again(&s.s, &ops_, dev, kIovBytes);
  ASSERT_EQ(again.result, 0);
  EXPECT_EQ(fgds_iov_gpu_path(&again.iov, &reason),
            static_cast<int>(FGDS_PATH_DIRECT))
      << "reason " << reason;
}

}  // namespace
}  // namespace fgds::testing
