// GPU iovs through an RDMA agent (rdma_agent_link.h) on the lab's
// soft-RoCE: a real dma-buf handed to the link as a GPU iov's would be.
//
// Soft-RoCE cannot take dma-buf regions (neither the rxe kernel driver of
// Debian's kernels nor rdma-core's rxe provider implement the dma-buf
// registration), so what this proves is the failure path as it will run
// on a host whose NIC says no (or whose GPU BAR is too small): the link
// refuses the transfer cleanly, once registered-or-failed per iov (no new
// registration per request), with the reason for `fgds stat`, and the
// connection stays usable for the next request. Should a guest ever take
// the registration, the same test checks the bytes landed in the dma-buf's
// pages instead.
//
// The dma-buf comes from /dev/udmabuf (pages of a memfd, exported by the
// kernel) when the guest has it; else the memfd itself stands in (the
// provider refuses before looking at the descriptor).
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backend/file_io.h"
#include "backend/remote/rdma_agent_link.h"
#include "gtest/gtest.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/random_bytes.h"

namespace fgds::remote {
namespace {

constexpr size_t kSize = 1 << 20;

// A GPU iov as the session hands it to the backend: device memory with the
// dma-buf it was exported as (the CPU address is the module's mapping on a
// GPU host; here the memfd's pages, which nothing but a check reads).
class DmabufRegion : public backend::MemoryRegion {
 public:
  DmabufRegion(char* base, uint64_t size, int fd)
      : MemoryRegion(base, size, Kind::kDevice, 0), fd_(fd) {}
  int dmabuf_fd() const override { return fd_; }
  uint64_t dmabuf_offset() const override { return 0; }

 private:
  const int fd_;
};

// A dma-buf of `memfd`'s first kSize bytes, or -1 (*why says why).
int Udmabuf(int memfd, std::string* why) {
  const int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
  if (dev < 0) {
    *why = std::string("/dev/udmabuf: ") + strerror(errno);
    return -1;
  }
  udmabuf_create create = {};
  create.memfd = static_cast<__u32>(memfd);
  create.flags = UDMABUF_FLAGS_CLOEXEC;
  create.offset = 0;
  create.size = kSize;
  const int fd = ioctl(dev, UDMABUF_CREATE, &create);
  if (fd < 0) *why = std::string("UDMABUF_CREATE: ") + strerror(errno);
  close(dev);
  return fd;
}

TEST(RdmaDmabufLabTest, AGpuIovTheNicCannotRegisterIsRefusedOnceWithTheReason) {
  const char* addr = getenv("FGDS_RDMA_LAB_ADDR");
  if (addr == nullptr) GTEST_SKIP() << "no RDMA device (FGDS_RDMA_LAB_ADDR)";
  auto dir = testing::MakeTempDir("fgds-rdma-dmabuf-lab.");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string data = *dir + "/data";
  ASSERT_EQ(mkdir(data.c_str(), 0755), 0);
  const std::string key = *dir + "/agent.key";
  { std::ofstream(key) << std::string(48, 'k'); }
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  const std::vector<uint8_t> content = testing::RandomBytes(kSize, 77);
  {
    std::ofstream out(data + "/gpu.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()),
              static_cast<std::streamsize>(content.size()));
  }
  auto agent = testing::AgentProcess::Start(
      {"--listen", std::string(addr) + ":0", "--data", data, "--key", key,
       "--transport", "rdma"});
  ASSERT_TRUE(agent.ok()) << agent.status();
  auto hp = ParseHostPort((*agent)->address());
  ASSERT_TRUE(hp.ok()) << hp.status();

  // udmabuf wants a memfd sealed against shrinking (and not against
  // writing).
  const int memfd =
      memfd_create("gpu-stand-in", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, kSize), 0);
  ASSERT_EQ(fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  char* pages = static_cast<char*>(
      mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0));
  ASSERT_NE(pages, MAP_FAILED);
  std::string why;
  int dmabuf = Udmabuf(memfd, &why);
  std::printf("dma-buf: %s\n",
              dmabuf >= 0 ? "from /dev/udmabuf"
                          : ("the memfd stands in (" + why + ")").c_str());
  const int fd = dmabuf >= 0 ? dmabuf : memfd;

  RdmaAgentClientOptions options;
  options.agent = *hp;
  options.key.secret = std::string(48, 'k');
  options.connect_timeout_ms = 10000;
  options.io_timeout_ms = 15000;
  auto link = RdmaAgentLink::Connect(options, kSize);
  ASSERT_TRUE(link.ok()) << link.status();
  {
    DmabufRegion gpu(pages, kSize, fd);
    RdmaTransferNote first;
    const int64_t n =
        (*link)->Transfer(false, "gpu.bin", 0, pages, kSize, &gpu, &first);
    if (n >= 0) {
      // A guest whose rxe takes dma-bufs: the bytes must be in the pages.
      std::printf("the NIC registered the dma-buf\n");
      EXPECT_EQ(n, static_cast<int64_t>(kSize));
      EXPECT_TRUE(first.registered && first.registration_made);
      EXPECT_EQ(std::memcmp(pages, content.data(), kSize), 0);
    } else {
      std::printf("refused: %s\n", first.registration_error.c_str());
      EXPECT_EQ(n, -EOPNOTSUPP);
      EXPECT_TRUE(first.refused);
      EXPECT_TRUE(first.registration_failed);
      EXPECT_FALSE(first.staged) << "the CPU cannot stage GPU memory";
      EXPECT_NE(first.registration_error.find("ibv_reg_dmabuf_mr"),
                std::string::npos)
          << first.registration_error;
      // Once per iov: the next request is refused for the kept reason,
      // without a new registration.
      RdmaTransferNote second;
      EXPECT_EQ(
          (*link)->Transfer(true, "gpu.bin", 0, pages, 4096, &gpu, &second),
          -EOPNOTSUPP);
      EXPECT_TRUE(second.refused);
      EXPECT_FALSE(second.registration_failed);
      EXPECT_EQ(second.registration_error, first.registration_error);
    }
  }
  // The connection is unharmed: a host request on it goes through.
  EXPECT_TRUE((*link)->connected());
  std::vector<uint8_t> back(4096);
  RdmaTransferNote host;
  EXPECT_EQ((*link)->Transfer(false, "gpu.bin", 4096, back.data(), back.size(),
                              nullptr, &host),
            4096);
  EXPECT_EQ(std::memcmp(back.data(), content.data() + 4096, 4096), 0);
  link->reset();
  munmap(pages, kSize);
  if (dmabuf >= 0) close(dmabuf);
  close(memfd);
  std::string rest;
  EXPECT_EQ((*agent)->Stop(&rest), 0) << rest;
  std::system(("rm -rf " + *dir).c_str());
}

}  // namespace
}  // namespace fgds::remote
