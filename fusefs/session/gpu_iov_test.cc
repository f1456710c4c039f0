// The daemon's GPU iov checks and its path choice on machines without the
// fgds module (CI): every missing piece gives BOUNCE with its reason.
#include "fusefs/session/gpu_iov.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "fusefs/session/gpu_iov_test_message.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

TEST(GpuIovTest, OnlyDmaBufsAreDmaBufs) {
  std::string exporter = "unchanged";
  int memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  EXPECT_EQ(DmaBufExporter(memfd, &exporter), -EINVAL);
  close(memfd);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  EXPECT_EQ(DmaBufExporter(pipe_fds[0], &exporter), -EINVAL);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  EXPECT_EQ(DmaBufExporter(-1, &exporter), -EINVAL);
  EXPECT_EQ(exporter, "unchanged");
}

// What the daemon keeps for a NIC-only GPU iov: a dma-buf or a memfd (the
// NIC judges it); not a pipe (nor any file whose close may block).
TEST(GpuIovTest, NicOnlyKeepsDmaBufsAndMemfdsOnly) {
  std::string exporter;
  int memfd = memfd_create("stand-in", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  EXPECT_EQ(NicOnlyDescriptor(memfd, &exporter), 0);
  EXPECT_EQ(exporter, "tmpfs");
  close(memfd);
  exporter = "unchanged";
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  EXPECT_EQ(NicOnlyDescriptor(pipe_fds[0], &exporter), -EINVAL);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(NicOnlyDescriptor(dir, &exporter), -EINVAL);
  close(dir);
  EXPECT_EQ(NicOnlyDescriptor(-1, &exporter), -EINVAL);
  EXPECT_EQ(exporter, "unchanged");
}

TEST(GpuIovTest, ImpossibleRequestsAreInvalid) {
  constexpr uint64_t kMax = uint64_t{1} << 30;
  EXPECT_EQ(CheckGpuIovValues(ValidGpuIovRegister(), kMax), 0);
  struct Case {
    const char* name;
    void (*mutate)(fgds_msg_gpu_iov_register&);
  } cases[] = {
      {"size 0", [](fgds_msg_gpu_iov_register& g) { g.size = 0; }},
      {"above the limit",
       [](fgds_msg_gpu_iov_register& g) {
         g.size = (uint64_t{1} << 30) + 4096;
         g.dmabuf_size = uint64_t{1} << 31;
       }},
      {"partial page dma-buf",
       [](fgds_msg_gpu_iov_register& g) { g.dmabuf_size += 1; }},
      {"range past the end",
       [](fgds_msg_gpu_iov_register& g) { g.dmabuf_offset = (1 << 20) + 1; }},
      {"offset past the end",
       [](fgds_msg_gpu_iov_register& g) { g.dmabuf_offset = 3 << 20; }},
      {"offset wraps",
       [](fgds_msg_gpu_iov_register& g) { g.dmabuf_offset = UINT64_MAX; }},
      {"empty pci id",
       [](fgds_msg_gpu_iov_register& g) { g.pci_bus_id[0] = '\0'; }},
      {"not a pci id",
       [](fgds_msg_gpu_iov_register& g) { strcpy(g.pci_bus_id, "gpu0"); }},
      {"trailing text",
       [](fgds_msg_gpu_iov_register& g) {
         strcpy(g.pci_bus_id, "0000:3B:00.0x");
       }},
  };
  for (const Case& c : cases) {
    fgds_msg_gpu_iov_register g = ValidGpuIovRegister();
    c.mutate(g);
    EXPECT_EQ(CheckGpuIovValues(g, kMax), -EINVAL) << c.name;
  }
}

class MapGpuIovTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fgds-gpu-iov-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    // Any descriptor does: nothing gets as far as the module here.
    fd_ = memfd_create("stand-in", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    unlink((dir_ + "/fgds_0000_3b_00_0").c_str());
    rmdir(dir_.c_str());
    if (fd_ >= 0) close(fd_);
  }
  std::string dir_;
  int fd_ = -1;
};

TEST_F(MapGpuIovTest, NoNodeMeansNoModule) {
  GpuIovOptions options;
  options.device_dir = dir_;
  GpuIovMapping m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_NO_MODULE);
  EXPECT_EQ(m.memory, nullptr);
  // The node's name, lower case as the module creates it, and the cause.
  EXPECT_NE(m.message.find(dir_ + "/fgds_0000_3b_00_0"), std::string::npos)
      << m.message;
  EXPECT_NE(m.message.find("not loaded"), std::string::npos) << m.message;
}

// --gpus leaves the GPU out: the daemon maps nothing of it (not even
// opening its node, which here would be an error) and says why; a subset
// holding it lets the request through to the node.
TEST_F(MapGpuIovTest, GpusOutsideTheDaemonsSubsetBounce) {
  int node = open((dir_ + "/fgds_0000_3b_00_0").c_str(),
                  O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(node, 0);
  close(node);
  GpuIovOptions options;
  options.device_dir = dir_;
  options.user.uid = 0;
  options.gpus.all = false;
  options.gpus.pci_bus_ids = {"0000:1b:00.0"};
  options.gpus.spec = "0";
  GpuIovMapping m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_EXCLUDED);
  EXPECT_EQ(m.memory, nullptr);
  EXPECT_EQ(m.message,
            "GPU 0000:3B:00.0 is not in the daemon's GPU subset (--gpus 0)");
  options.gpus.pci_bus_ids.push_back("0000:3b:00.0");
  m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_MODULE_ERROR) << m.message;
}

TEST_F(MapGpuIovTest, NodeThatIsNotTheModuleIsAnError) {
  // A regular file where the node should be: opens, but answers no QUERY.
  int node = open((dir_ + "/fgds_0000_3b_00_0").c_str(),
                  O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(node, 0);
  close(node);
  GpuIovOptions options;
  options.device_dir = dir_;
  options.user.uid = 0;  // root may open any node
  GpuIovMapping m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_MODULE_ERROR);
  EXPECT_NE(m.message.find("QUERY"), std::string::npos) << m.message;
}

TEST_F(MapGpuIovTest, NodeIsOpenedOnlyForUsersItsModeLetsIn) {
  // The udev rule's node: root, group fgds (here a group nobody below is
  // in), 0660. The daemon (root) must not open it for a user outside it.
  const std::string node = dir_ + "/fgds_0000_3b_00_0";
  int fd = open(node.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(chown(node.c_str(), 0, 54321), 0);
  ASSERT_EQ(chmod(node.c_str(), 0660), 0);
  GpuIovOptions options;
  options.device_dir = dir_;
  options.user.uid = 12345;
  options.user.gid = 12345;
  options.user.groups = {12345};
  GpuIovMapping m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.path, FGDS_PATH_BOUNCE);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_MODULE_ERROR);
  EXPECT_NE(m.message.find("may not use"), std::string::npos) << m.message;
  // A member of the node's group gets as far as the node itself (which,
  // a regular file here, answers no QUERY).
  options.user.groups.push_back(54321);
  m = MapGpuIov(ValidGpuIovRegister(), fd_, options);
  EXPECT_EQ(m.reason, FGDS_IOV_GPU_REASON_MODULE_ERROR);
  EXPECT_NE(m.message.find("QUERY"), std::string::npos) << m.message;
}

}  // namespace
}  // namespace fgds::session
