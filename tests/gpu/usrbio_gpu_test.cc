// usrbio GPU iovs (bounce path) on a real GPU against a mounted daemon:
// data checks in cuMemAlloc'd memory, a sub-range of a larger allocation,
// several threads each with its own ior and GPU iov, a buffer freed under
// I/O, a client SIGKILLed mid-I/O, and a mount whose RDMA agent cannot be
// reached. Skips without a GPU, root or
// /dev/fuse.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/kmod/device_node.h"
#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_env.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/random_bytes.h"
#include "usrbio/cuda/cuda_memory.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Runs every I/O of `ior` to completion; returns completions by userdata.
std::vector<fgds_cqe> Drain(fgds_ior* ior, unsigned n) {
  std::vector<fgds_cqe> out(n);
  if (fgds_ior_submit(ior) < 0) return {};
  unsigned got = 0;
  while (got < n) {
    int ret = fgds_ior_wait(ior, out.data() + got, n - got, 1, 30000000);
    if (ret <= 0) break;
    got += static_cast<unsigned>(ret);
  }
  out.resize(got);
  return out;
}

class UsrbioGpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FGDS_REQUIRE_GPU();
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto fs = MountedFs::Start(Options());
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    ASSERT_EQ(fgds_session_open(&session_, fs_->mountpoint().c_str(), nullptr),
              0);
    open_ = true;
  }
  void TearDown() override {
    if (open_) fgds_session_close(&session_);
  }
  // What the daemon is mounted with.
  virtual MountOptions Options() { return {}; }
  std::string WriteBacking(const std::string& name,
                           const std::vector<uint8_t>& bytes) {
    std::string path = fs_->backing() + "/" + name;
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    fsync(fd);
    close(fd);
    return fs_->mountpoint() + "/" + name;
  }
  int Register(const std::string& path, int flags) {
    int fd = open(path.c_str(), flags, 0644);
    EXPECT_GE(fd, 0) << path;
    int id = fgds_fd_register(&session_, fd, 0);
    close(fd);
    return id;
  }

  std::unique_ptr<MountedFs> fs_;
  fgds_session session_ = {};
  bool open_ = false;
};

TEST_F(UsrbioGpuDeviceTest, ReadsAndWritesInASubRangeOfAnAllocation) {
  const uint64_t size = 24 * kMiB + 1234;
  const auto data = RandomBytes(size, 31);
  const std::string path = WriteBacking("r", data);
  DeviceBuffer block(64 * kMiB);  // a caching allocator's block
  block.Fill(0);
  const uint64_t tensor = block.address() + 3 * kMiB + 512;
  fgds_iov_gpu_params p = {};
  p.staging_bytes = 8 * kMiB;  // smaller than the requests
  fgds_iov iov;
  // The tensor is a page longer than the file: the second read runs past
  // EOF and must come back short, with nothing copied beyond it.
  ASSERT_EQ(fgds_iov_wrap_gpu(&session_, &iov, tensor, size + 4096, &p), 0);
  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&session_, &ior, nullptr), 0);
  // Past the tensor: refused at prep.
  EXPECT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor + 1), 0,
                           0, size + 4096, 9),
            -EINVAL);
  const int id = Register(path, O_RDONLY);
  ASSERT_GE(id, 0);
  const uint64_t split = 10 * kMiB + 77;
  ASSERT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor), id, 0,
                           split, 1),
            0);
  ASSERT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor + split),
                           id, split, size - split + 4096, 2),
            0);
  auto cqes = Drain(&ior, 2);
  ASSERT_EQ(cqes.size(), 2u);
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.path, FGDS_PATH_BOUNCE);
    EXPECT_EQ(c.result,
              static_cast<int64_t>(c.userdata == 1 ? split : size - split));
  }
  // Completed means copied: a plain synchronous download sees it all.
  EXPECT_TRUE(block.Download(tensor - block.address(), size) == data);
  EXPECT_EQ(block.Download(tensor - block.address() - 1, 1)[0], 0);
  EXPECT_EQ(block.Download(tensor - block.address() + size, 1)[0], 0);

  // And back out: device -> a new file, then compared in the backing dir.
  const int wid = Register(fs_->mountpoint() + "/w", O_CREAT | O_WRONLY);
  ASSERT_GE(wid, 0);
  ASSERT_EQ(fgds_prep_write(&ior, &iov, reinterpret_cast<void*>(tensor), wid, 0,
                            size, 3),
            0);
  cqes = Drain(&ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(size));
  std::vector<uint8_t> back(size);
  int bfd = open((fs_->backing() + "/w").c_str(), O_RDONLY);
  ASSERT_GE(bfd, 0);
  EXPECT_EQ(pread(bfd, back.data(), size, 0), static_cast<ssize_t>(size));
  close(bfd);
  EXPECT_TRUE(back == data);
  EXPECT_EQ(fgds_ior_destroy(&ior), 0);
  EXPECT_EQ(fgds_iov_destroy(&iov), 0);
}

TEST_F(UsrbioGpuDeviceTest, ThreadsEachWithTheirOwnIorAndIov) {
  constexpr int kThreads = 4;
  const uint64_t per = 16 * kMiB + 4096 * 3 + 5;
  const auto data = RandomBytes(per * kThreads, 32);
  const std::string path = WriteBacking("c", data);
  const int id = Register(path, O_RDONLY);
  ASSERT_GE(id, 0);
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      GpuEnv::Get().MakeCurrent();
      DeviceBuffer buf(per);
      fgds_iov_gpu_params p = {};
      p.staging_bytes = 4 * kMiB;
      p.chunk_bytes = 512 * 1024;
      fgds_iov iov;
      fgds_ior ior;
      if (fgds_iov_wrap_gpu(&session_, &iov, buf.address(), per, &p) != 0) {
        return;
      }
      if (fgds_ior_create(&session_, &ior, nullptr) != 0) return;
      // Many pieces, each with its own completion.
      const uint64_t piece = per / 8 + 1;
      unsigned n = 0;
      for (uint64_t off = 0; off < per; off += piece, ++n) {
        const uint64_t len = std::min(piece, per - off);
        if (fgds_prep_read(&ior, &iov,
                           reinterpret_cast<void*>(buf.address() + off), id,
                           t * per + off, len, off) != 0) {
          return;
        }
      }
      auto cqes = Drain(&ior, n);
      bool good = cqes.size() == n;
      for (const fgds_cqe& c : cqes) good = good && c.result > 0;
      const auto got = buf.Download(0, per);
      good = good && std::equal(got.begin(), got.end(), data.begin() + t * per);
      fgds_ior_destroy(&ior);
      fgds_iov_destroy(&iov);
      ok[t] = good ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1) << t;
}

TEST_F(UsrbioGpuDeviceTest, FreeingTheBufferUnderIoFailsThatRequest) {
  const uint64_t size = 128 * kMiB;
  const std::string path = WriteBacking("f", RandomBytes(size, 33));
  auto buf = std::make_unique<DeviceBuffer>(size);
  fgds_iov_gpu_params p = {};
  p.staging_bytes = 4 * kMiB;
  fgds_iov iov;
  ASSERT_EQ(fgds_iov_wrap_gpu(&session_, &iov, buf->address(), size, &p), 0);
  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&session_, &ior, nullptr), 0);
  const int id = Register(path, O_RDONLY);
  ASSERT_EQ(fgds_prep_read(&ior, &iov, buf->ptr(), id, 0, size, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&ior), 1);
  fgds_cqe cqe;
  EXPECT_EQ(fgds_ior_peek(&ior, &cqe, 1), 0);  // 4 MiB of staging: not yet
  buf->Free();
  ASSERT_EQ(fgds_ior_wait(&ior, &cqe, 1, 1, 30000000), 1);
  EXPECT_EQ(cqe.result, -EFAULT);
  // The library and the daemon go on as before.
  DeviceBuffer other(4 * kMiB);
  fgds_iov iov2;
  ASSERT_EQ(
      fgds_iov_wrap_gpu(&session_, &iov2, other.address(), 4 * kMiB, nullptr),
      0);
  ASSERT_EQ(fgds_prep_read(&ior, &iov2, other.ptr(), id, 0, 4 * kMiB, 2), 0);
  auto cqes = Drain(&ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(4 * kMiB));
  fgds_ior_destroy(&ior);
  fgds_iov_destroy(&iov2);
  fgds_iov_destroy(&iov);
}

// fgds_iov_wrap_gpu exports real device memory as a dma-buf and offers it
// to the daemon. The daemon must take it as a dma-buf (never REFUSED) and
// pick its path by what the machine has: without the fgds module (our GPU
// machine cannot load modules) BOUNCE with NO_MODULE; with it, DIRECT or a
// reason about the route. Either way the bytes arrive exactly, and aligned
// entries complete on the path the iov reports.
TEST_F(UsrbioGpuDeviceTest, OffersARealDmaBufAndStillMovesEveryByte) {
  cuda::DeviceInfo info;
  std::string message;
  ASSERT_EQ(cuda::QueryDevice(GpuEnv::Get().api(), 0, &info, &message), 0)
      << message;
  const uint64_t size = 8 * kMiB;
  const auto data = RandomBytes(size, 47);
  const std::string path = WriteBacking("dmabuf", data);
  DeviceBuffer block(16 * kMiB);
  block.Fill(0);
  const uint64_t tensor = block.address() + kMiB;  // page aligned
  fgds_iov iov;
  ASSERT_EQ(fgds_iov_wrap_gpu(&session_, &iov, tensor, size, nullptr), 0);
  uint32_t reason = 99;
  const int gpu_path = fgds_iov_gpu_path(&iov, &reason);
  const std::string node = kmod::FgdsDeviceNode(info.pci_bus_id);
  std::printf(
      "GPU %s: dma-buf %s, %s %s; iov path %d reason %u\n", info.pci_bus_id,
      info.dmabuf_supported ? "yes" : "no", node.c_str(),
      access(node.c_str(), F_OK) == 0 ? "present" : "absent", gpu_path, reason);
  if (!info.dmabuf_supported) {
    // Proprietary kernel modules: nothing to export.
    EXPECT_EQ(gpu_path, static_cast<int>(FGDS_PATH_BOUNCE));
    EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_NO_DMABUF);
  } else if (access(node.c_str(), F_OK) != 0) {
    // The daemon accepted a real dma-buf and found no module for it.
    EXPECT_EQ(gpu_path, static_cast<int>(FGDS_PATH_BOUNCE));
    EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_NO_MODULE);
  } else {
    EXPECT_NE(reason, FGDS_IOV_GPU_REASON_NO_DMABUF);
    EXPECT_NE(reason, FGDS_IOV_GPU_REASON_REFUSED);
  }
  const uint32_t aligned_path = gpu_path == static_cast<int>(FGDS_PATH_DIRECT)
                                    ? FGDS_PATH_DIRECT
                                    : FGDS_PATH_BOUNCE;

  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&session_, &ior, nullptr), 0);
  const int id = Register(path, O_RDONLY);
  ASSERT_GE(id, 0);
  // One aligned entry (the direct path's shape) and one unaligned tail.
  const uint64_t split = 4 * kMiB;
  ASSERT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor), id, 0,
                           split, 1),
            0);
  ASSERT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor + split),
                           id, split, size - split - 3, 2),
            0);
  auto cqes = Drain(&ior, 2);
  ASSERT_EQ(cqes.size(), 2u);
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.result,
              static_cast<int64_t>(c.userdata == 1 ? split : size - split - 3));
    EXPECT_EQ(c.path, c.userdata == 1 ? aligned_path : FGDS_PATH_BOUNCE);
  }
  auto got = block.Download(kMiB, size - 3);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  EXPECT_EQ(block.Download(kMiB + size - 3, 1)[0], 0);

  // And an aligned write back out, compared in the backing directory.
  const int wid = Register(fs_->mountpoint() + "/dmabuf-w", O_CREAT | O_WRONLY);
  ASSERT_GE(wid, 0);
  ASSERT_EQ(fgds_prep_write(&ior, &iov, reinterpret_cast<void*>(tensor), wid, 0,
                            split, 3),
            0);
  cqes = Drain(&ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(split));
  EXPECT_EQ(cqes[0].path, aligned_path);
  std::vector<uint8_t> back(split);
  int bfd = open((fs_->backing() + "/dmabuf-w").c_str(), O_RDONLY);
  ASSERT_GE(bfd, 0);
  EXPECT_EQ(pread(bfd, back.data(), split, 0), static_cast<ssize_t>(split));
  close(bfd);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), data.begin()));
  EXPECT_EQ(fgds_ior_destroy(&ior), 0);
  EXPECT_EQ(fgds_iov_destroy(&iov), 0);
}

// A mount whose agent is an RDMA one (`--agents rdma://...`) on a host that
// cannot reach it: the GPU machine has no RDMA NIC (and its fgds may be
// built without RDMA). GPU iovs must move every byte anyway, by the next
// path: a direct iov (the fgds module mapped it) keeps its dma-buf for the
// NIC, the link cannot connect, and the local backend's DMA path serves
// it, counted in `gpu_fallbacks`; a bounced iov (no module) stages through
// host memory, whose requests fall back the same way. The stats say why.
class UsrbioGpuAgentTest : public UsrbioGpuDeviceTest {
 protected:
  MountOptions Options() override {
    key_ = "/tmp/fgds-gpu-agent-test.key";
    int fd = open(key_.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    const std::string secret(48, 'k');
    EXPECT_EQ(write(fd, secret.data(), secret.size()),
              static_cast<ssize_t>(secret.size()));
    fchmod(fd, 0600);
    close(fd);
    MountOptions options;
    // Port 1 on loopback: nothing listens there, RDMA or not.
    options.extra_args = {"--agents", "rdma://127.0.0.1:1", "--agent-key",
                          key_};
    return options;
  }
  void TearDown() override {
    UsrbioGpuDeviceTest::TearDown();
    if (!key_.empty()) unlink(key_.c_str());
  }
  std::string Stats() {
    std::string text;
    int fd = open((fs_->mountpoint() + "/.fgds/stats").c_str(), O_RDONLY);
    if (fd < 0) return text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, n);
    close(fd);
    return text;
  }
  std::string key_;
};

TEST_F(UsrbioGpuAgentTest, AnUnreachableRdmaAgentCostsGpuIovsOnlyTheFallback) {
  const uint64_t size = 8 * kMiB;
  const auto data = RandomBytes(size, 53);
  const std::string path = WriteBacking("agent", data);
  DeviceBuffer block(16 * kMiB);
  block.Fill(0);
  const uint64_t tensor = block.address() + kMiB;
  fgds_iov iov;
  ASSERT_EQ(fgds_iov_wrap_gpu(&session_, &iov, tensor, size, nullptr), 0);
  uint32_t reason = 99;
  const int gpu_path = fgds_iov_gpu_path(&iov, &reason);
  std::printf("GPU iov path %d reason %u\n", gpu_path, reason);
  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&session_, &ior, nullptr), 0);
  const int id = Register(path, O_RDONLY);
  ASSERT_GE(id, 0);
  ASSERT_EQ(fgds_prep_read(&ior, &iov, reinterpret_cast<void*>(tensor), id, 0,
                           size, 1),
            0);
  auto cqes = Drain(&ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(size));
  // Not by the agent: it was never reached.
  EXPECT_NE(cqes[0].path, FGDS_PATH_RDMA);
  EXPECT_NE(cqes[0].path, FGDS_PATH_TCP);
  EXPECT_TRUE(block.Download(kMiB, size) == data);
  const std::string stats = Stats();
  std::printf("%s", stats.c_str());
  // Tried and failed, with a reason (its state may read "up" again once
  // the retry delay has passed).
  EXPECT_NE(stats.find("# agent rdma://127.0.0.1:1: state="), std::string::npos)
      << stats;
  EXPECT_EQ(stats.find(" failures=0 "), std::string::npos) << stats;
  EXPECT_EQ(stats.find("last_error=\"\""), std::string::npos) << stats;
  if (gpu_path == static_cast<int>(FGDS_PATH_DIRECT)) {
    // The module's mapping, by the local backend's DMA path (through the
    // pool and back when this fgds has RDMA: gpu_fallbacks counts it).
    EXPECT_EQ(cqes[0].path, FGDS_PATH_DIRECT);
  } else {
    // Staged in host memory: no GPU memory reached the pool.
    EXPECT_EQ(cqes[0].path, FGDS_PATH_BOUNCE);
    EXPECT_NE(stats.find(" gpu_fallbacks=0 "), std::string::npos) << stats;
  }
  EXPECT_EQ(fgds_ior_destroy(&ior), 0);
  EXPECT_EQ(fgds_iov_destroy(&iov), 0);
}

// The child side of ClientKilledMidIo (a fresh process: CUDA does not
// survive fork): reads forever until killed.
TEST(UsrbioGpuChild, ReadForever) {
  const char* mount = getenv("FGDS_USRBIO_GPU_CHILD");
  if (mount == nullptr) GTEST_SKIP() << "run by ClientKilledMidIo only";
  FGDS_REQUIRE_GPU();
  fgds_session s;
  ASSERT_EQ(fgds_session_open(&s, mount, nullptr), 0);
  const uint64_t size = 64 * kMiB;
  DeviceBuffer buf(size);
  fgds_iov iov;
  ASSERT_EQ(fgds_iov_wrap_gpu(&s, &iov, buf.address(), size, nullptr), 0);
  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&s, &ior, nullptr), 0);
  int fd = open((std::string(mount) + "/k").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const int id = fgds_fd_register(&s, fd, 0);
  ASSERT_GE(id, 0);
  fprintf(stderr, "child: reading\n");
  for (;;) {
    ASSERT_EQ(fgds_prep_read(&ior, &iov, buf.ptr(), id, 0, size, 1), 0);
    auto cqes = Drain(&ior, 1);
    ASSERT_EQ(cqes.size(), 1u);
  }
}

TEST_F(UsrbioGpuDeviceTest, ClientKilledMidIo) {
  WriteBacking("k", RandomBytes(64 * kMiB, 34));
  // Everything the child needs is ready before fork: it only execs.
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  self[n] = '\0';
  setenv("FGDS_USRBIO_GPU_CHILD", fs_->mountpoint().c_str(), 1);
  const pid_t child = fork();
  if (child == 0) {
    execl(self, self, "--gtest_filter=UsrbioGpuChild.ReadForever",
          static_cast<char*>(nullptr));
    _exit(3);
  }
  unsetenv("FGDS_USRBIO_GPU_CHILD");
  ASSERT_GE(child, 0);
  sleep(3);  // CUDA start-up, then several reads
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the child ended on its own: " << status;
  EXPECT_EQ(kill(fs_->daemon_pid(), 0), 0) << "the daemon died";
  // A new client works.
  DeviceBuffer buf(8 * kMiB);
  fgds_iov iov;
  ASSERT_EQ(
      fgds_iov_wrap_gpu(&session_, &iov, buf.address(), 8 * kMiB, nullptr), 0);
  fgds_ior ior;
  ASSERT_EQ(fgds_ior_create(&session_, &ior, nullptr), 0);
  const int id = Register(fs_->mountpoint() + "/k", O_RDONLY);
  ASSERT_EQ(fgds_prep_read(&ior, &iov, buf.ptr(), id, kMiB, 8 * kMiB, 1), 0);
  auto cqes = Drain(&ior, 1);
  ASSERT_EQ(cqes.size(), 1u);
  EXPECT_EQ(cqes[0].result, static_cast<int64_t>(8 * kMiB));
  const auto want = RandomBytes(64 * kMiB, 34);
  EXPECT_TRUE(std::equal(want.begin() + kMiB, want.begin() + 9 * kMiB,
                         buf.Download(0, 8 * kMiB).begin()));
  fgds_ior_destroy(&ior);
  fgds_iov_destroy(&iov);
}

}  // namespace
}  // namespace fgds::testing
