#include "common/gpu/gpu_sysfs.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace fgds::gpu {
namespace {

// A fake sysfs + procfs tree: two NVIDIA GPUs on nodes 1 and 0 (listed
// out of PCI order), one NVIDIA audio function, one other vendor's GPU.
class GpuSysfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpu_sysfs_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    sys_ = root_ + "/sys";
    proc_ = root_ + "/proc";
    AddPci("0000:3b:00.0", "0x10de", "0x030200", "0");
    AddPci("0000:1b:00.0", "0x10de", "0x030200", "1");
    AddPci("0000:1b:00.1", "0x10de", "0x040300", "1");
    AddPci("0000:5e:00.0", "0x1002", "0x030000", "0");
    AddPci("0000:6e:00.0", "0x10de", "0x030000", "-1");
    Write(sys_ + "/devices/system/node/node0/cpulist", "0-7\n");
    Write(sys_ + "/devices/system/node/node1/cpulist", "8-15\n");
    Write(proc_ + "/driver/nvidia/gpus/0000:3b:00.0/information",
          "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n"
          "GPU UUID: \t GPU-AAAAAAAA-BBBB-CCCC-DDDD-EEEEFFFF0000\n"
          "Bus Location: \t 0000:3b:00.0\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(
        std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  void AddPci(const std::string& bdf, const char* vendor, const char* cls,
              const char* node) {
    const std::string dir = sys_ + "/bus/pci/devices/" + bdf;
    Write(dir + "/vendor", std::string(vendor) + "\n");
    Write(dir + "/class", std::string(cls) + "\n");
    Write(dir + "/numa_node", std::string(node) + "\n");
  }

  std::string root_, sys_, proc_;
};

TEST_F(GpuSysfsTest, NumaNodeOfAGpu) {
  EXPECT_EQ(PciNumaNode(sys_, "0000:3B:00.0"), 0);
  EXPECT_EQ(PciNumaNode(sys_, "1b:00.0"), 1);
  EXPECT_EQ(PciNumaNode(sys_, "0000:6e:00.0"), -1);  // the kernel says -1
  EXPECT_EQ(PciNumaNode(sys_, "0000:99:00.0"), -1);  // no such device
  EXPECT_EQ(PciNumaNode(sys_, "not a pci address"), -1);
  // A node the kernel names but that has no node directory: no NUMA.
  Write(sys_ + "/bus/pci/devices/0000:3b:00.0/numa_node", "3\n");
  EXPECT_EQ(PciNumaNode(sys_, "0000:3b:00.0"), -1);
  Write(sys_ + "/bus/pci/devices/0000:3b:00.0/numa_node", "junk\n");
  EXPECT_EQ(PciNumaNode(sys_, "0000:3b:00.0"), -1);
}

TEST_F(GpuSysfsTest, ApertureIsTheLargestPrefetchableMemoryBar) {
  // BAR0 16 MiB non-prefetchable, BAR2 256 GiB prefetchable 64-bit, BAR4
  // 32 MiB prefetchable, an I/O port range, unassigned rows.
  Write(sys_ + "/bus/pci/devices/0000:3b:00.0/resource",
        "0x00000000d0000000 0x00000000d0ffffff 0x0000000000040200\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000200000000000 0x0000203fffffffff 0x000000000014220c\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000204000000000 0x0000204001ffffff 0x000000000014220c\n"
        "0x000000000000e000 0x000000000000e07f 0x0000000000040101\n");
  EXPECT_EQ(PciApertureBytes(sys_, "0000:3b:00.0"), uint64_t{256} << 30);
  EXPECT_EQ(PciApertureBytes(sys_, "0000:1b:00.0"), 0u);  // no resource file
  EXPECT_EQ(PciApertureBytes(sys_, "junk"), 0u);
}

TEST_F(GpuSysfsTest, UuidFromTheDriversInformationFile) {
  EXPECT_EQ(NvidiaGpuUuid(proc_, "0000:3b:00.0"),
            "gpu-aaaaaaaa-bbbb-cccc-dddd-eeeeffff0000");
  EXPECT_EQ(NvidiaGpuUuid(proc_, "0000:1b:00.0"), "");
}

TEST_F(GpuSysfsTest, NvidiaGpusInPciOrder) {
  const std::vector<GpuIdentity> gpus = ListNvidiaGpus(sys_, proc_);
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].pci_bus_id, "0000:1b:00.0");
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[0].uuid, "");
  EXPECT_EQ(gpus[1].pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].uuid, "gpu-aaaaaaaa-bbbb-cccc-dddd-eeeeffff0000");
  EXPECT_EQ(gpus[2].pci_bus_id, "0000:6e:00.0");
  EXPECT_TRUE(ListNvidiaGpus(root_ + "/nothing", proc_).empty());
}

TEST(PreferNumaNodeTest, PlacesPagesOrSaysWhyNot) {
  const size_t len = 1 << 20;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(PreferNumaNode(p, len, -1), 0);  // no preference: nothing done
  EXPECT_EQ(PreferNumaNode(p, len, 64), -EINVAL);
  // Node 0 exists on every Linux host with NUMA; without NUMA the kernel
  // says ENOSYS, which callers treat as "no placement".
  const int ret = PreferNumaNode(p, len, 0);
  EXPECT_TRUE(ret == 0 || ret == -ENOSYS) << ret;
  static_cast<char*>(p)[0] = 1;
  munmap(p, len);
}

}  // namespace
}  // namespace fgds::gpu
