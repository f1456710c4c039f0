// GPU iovs offering their dma-buf to a mounted daemon
// (FGDS_MSG_GPU_IOV_REGISTER) on a machine with neither a GPU nor the fgds
// module: the daemon refuses what is no dma-buf and the session goes on,
// malformed messages end the session, and every GPU iov that is not
// direct says why and still moves its data on the bounce path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/usrbio_gpu_harness.h"
#include "usrbio/internal.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

fgds_msg_gpu_iov_register GoodMessage() {
  fgds_msg_gpu_iov_register m = {};
  m.size = kMiB;
  m.dmabuf_size = kMiB;
  strcpy(m.pci_bus_id, "0000:3b:00.0");
  return m;
}

// Sends GPU_IOV_REGISTER with `fds`; the reply's result.
int SendGpuIov(fgds_session* s, const fgds_msg_gpu_iov_register& m,
               const int* fds, int nfds, fgds_msg_reply* reply = nullptr) {
  fgds_msg_reply ignored = {};
  return usrbio::ExchangeReply(s, FGDS_MSG_GPU_IOV_REGISTER, &m, sizeof(m), fds,
                               nfds, reply ? reply : &ignored);
}

// Descriptors of process `pid` whose target starts with `prefix`.
int CountFds(pid_t pid, const std::string& prefix) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  int count = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    char target[256];
    ssize_t n =
        readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (n < 0) continue;
    if (std::string(target, static_cast<size_t>(n)).rfind(prefix, 0) == 0) {
      ++count;
    }
  }
  closedir(d);
  return count;
}

// Reads 2 MiB of `path` into the GPU iov with one aligned and one
// unaligned entry and checks the bytes and the path each took.
void ReadAndVerify(fgds_session* s, fgds_iov* iov, uint64_t dev, int id,
                   uint64_t seed) {
  Ior ior(s);
  ASSERT_EQ(ior.result, 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, iov, reinterpret_cast<void*>(dev), id, 0,
                           kMiB, 1),
            0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, iov, reinterpret_cast<void*>(dev + kMiB),
                           id, kMiB, kMiB - 1, 2),
            0);
  fgds_cqe cqes[2];
  ASSERT_EQ(SubmitAndWaitAll(&ior.ior, cqes, 2), 2);
  for (const fgds_cqe& c : cqes) {
    EXPECT_EQ(c.result, static_cast<int64_t>(c.userdata == 1 ? kMiB : kMiB - 1))
        << c.userdata;
    EXPECT_EQ(c.path, FGDS_PATH_BOUNCE) << c.userdata;
  }
  EXPECT_TRUE(
      MatchesPattern(reinterpret_cast<char*>(dev), 2 * kMiB - 1, seed, 0));
}

class UsrbioGpuDmaBufTest : public UsrbioGpuTest {};

TEST_F(UsrbioGpuDmaBufTest, WithoutExportTheIovBouncesAndSaysWhy) {
  const std::string path = MakeFile("f", 2 * kMiB, 21);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(2 * kMiB);
  FakeGpuIov g(&s.s, &ops_, dev, 2 * kMiB);  // FakeDeviceOps: no dma-buf
  ASSERT_EQ(g.result, 0);
  uint32_t reason = 99;
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, &reason),
            static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_NO_DMABUF);
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, nullptr),
            static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(ops_.exports(), 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  ReadAndVerify(&s.s, &g.iov, dev, id, 21);

  // Host iovs have no GPU path.
  Iov host(&s.s, kMiB);
  ASSERT_EQ(host.result, 0);
  EXPECT_EQ(fgds_iov_gpu_path(&host.iov, &reason), -EINVAL);
  EXPECT_EQ(fgds_iov_gpu_path(nullptr, &reason), -EINVAL);
}

TEST_F(UsrbioGpuDmaBufTest, DaemonRefusesAnExportThatIsNoDmaBuf) {
  const std::string path = MakeFile("f", 2 * kMiB, 22);
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  const uint64_t dev = ops_.Alloc(2 * kMiB);
  // The client exports (a memfd posing as a dma-buf) and offers it.
  ops_.FakeDmaBufExport("0000:3b:00.0");
  FakeGpuIov g(&s.s, &ops_, dev, 2 * kMiB);
  ASSERT_EQ(g.result, 0);
  EXPECT_EQ(ops_.exports(), 1);
  uint32_t reason = 99;
  EXPECT_EQ(fgds_iov_gpu_path(&g.iov, &reason),
            static_cast<int>(FGDS_PATH_BOUNCE));
  EXPECT_EQ(reason, FGDS_IOV_GPU_REASON_REFUSED);
  // Neither side keeps the export: the client closed it after sending, the
  // daemon after refusing.
  EXPECT_EQ(CountFds(getpid(), "/memfd:fgds-fake-dmabuf"), 0);
  EXPECT_EQ(CountFds(fs_->daemon_pid(), "/memfd:fgds-fake-dmabuf"), 0);
  const int id = Register(&s.s, path, O_RDONLY);
  ASSERT_GE(id, 0);
  ReadAndVerify(&s.s, &g.iov, dev, id, 22);
}

TEST_F(UsrbioGpuDmaBufTest, WrongValuesGetEinvalAndTheSessionGoesOn) {
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  int memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  char pipe_name[64] = {};
  const std::string self = "/proc/self/fd/" + std::to_string(pipe_fds[0]);
  ASSERT_GT(readlink(self.c_str(), pipe_name, sizeof(pipe_name) - 1), 0);
  fgds_msg_reply reply = {};
  EXPECT_EQ(SendGpuIov(&s.s, GoodMessage(), &memfd, 1, &reply), -EINVAL);
  EXPECT_EQ(SendGpuIov(&s.s, GoodMessage(), &pipe_fds[0], 1), -EINVAL);
  auto m = GoodMessage();
  m.size = 0;
  EXPECT_EQ(SendGpuIov(&s.s, m, &memfd, 1), -EINVAL) << "size 0";
  m = GoodMessage();
  m.dmabuf_offset = 4096;  // one page past the end
  EXPECT_EQ(SendGpuIov(&s.s, m, &memfd, 1), -EINVAL) << "range";
  m = GoodMessage();
  memset(m.pci_bus_id, 0, sizeof(m.pci_bus_id));  // nothing after the NUL
  strcpy(m.pci_bus_id, "gpu0");
  EXPECT_EQ(SendGpuIov(&s.s, m, &memfd, 1), -EINVAL) << "pci id";
  close(memfd);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  // Still served, and the daemon kept none of the descriptors.
  Iov iov(&s.s, kMiB);
  EXPECT_EQ(iov.result, 0);
  EXPECT_EQ(CountFds(fs_->daemon_pid(), "/memfd:not-a-dmabuf"), 0);
  EXPECT_EQ(CountFds(fs_->daemon_pid(), pipe_name), 0) << pipe_name;
}

TEST_F(UsrbioGpuDmaBufTest, MalformedMessagesEndTheSession) {
  int memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  struct Case {
    const char* name;
    void (*mutate)(fgds_msg_gpu_iov_register&);
    int nfds;
  } cases[] = {
      {"flags", [](fgds_msg_gpu_iov_register& m) { m.flags = 1; }, 1},
      {"reserved0", [](fgds_msg_gpu_iov_register& m) { m.reserved0 = 1; }, 1},
      {"reserved", [](fgds_msg_gpu_iov_register& m) { m.reserved[1] = 1; }, 1},
      {"unterminated pci id",
       [](fgds_msg_gpu_iov_register& m) {
         memset(m.pci_bus_id, '0', sizeof(m.pci_bus_id));
       },
       1},
      {"missing fd", [](fgds_msg_gpu_iov_register&) {}, 0},
  };
  for (const Case& c : cases) {
    Session s(fs_->mountpoint());
    ASSERT_EQ(s.open_result, 0);
    auto m = GoodMessage();
    c.mutate(m);
    EXPECT_EQ(SendGpuIov(&s.s, m, &memfd, c.nfds), -EPROTO) << c.name;
    // The daemon closed this session, and only this one.
    fgds_iov_params p = {};
    p.size = kMiB;
    p.numa_node = -1;
    fgds_iov iov;
    const int after = fgds_iov_create(&s.s, &iov, &p);
    EXPECT_TRUE(after == -ENOTCONN || after == -EPIPE) << c.name << after;
  }
  close(memfd);
  Session other(fs_->mountpoint());
  EXPECT_EQ(other.open_result, 0);
  EXPECT_EQ(CountFds(fs_->daemon_pid(), "/memfd:not-a-dmabuf"), 0);
}

}  // namespace
}  // namespace fgds::testing
