#include "tools/probe/fake_sysfs.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace fgds::probe {

namespace fs = std::filesystem;

const char kBigBar1Resource[] =
    "0x00000000e2000000 0x00000000e2ffffff 0x0000000000040200\n"
    "0x0000220000000000 0x0000220fffffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
    "0x0000221000000000 0x0000221001ffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
const char kSmallBar1Resource[] =
    "0x00000000e2000000 0x00000000e2ffffff 0x0000000000040200\n"
    "0x00000000c0000000 0x00000000cfffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
const char kNvmeResource[] =
    "0x00000000e4000000 0x00000000e4003fff 0x0000000000140204\n";

FakeHost::FakeHost() {
  const char* tmp = getenv("TMPDIR");
  std::string templ =
      absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/fgds-probe-XXXXXX");
  char* dir = mkdtemp(templ.data());
  EXPECT_NE(dir, nullptr) << templ;
  root_ = templ;
}

FakeHost::~FakeHost() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string FakeHost::Host(const std::string& host_path) const {
  return root_ + host_path;
}

void FakeHost::Write(const std::string& host_path, const std::string& content) {
  fs::path path = Host(host_path);
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << content;
  EXPECT_TRUE(out.good()) << path;
}

void FakeHost::Mkdir(const std::string& host_path) {
  fs::create_directories(Host(host_path));
}

void FakeHost::Remove(const std::string& host_path) {
  fs::remove_all(Host(host_path));
}

void FakeHost::Link(const std::string& host_path, const std::string& target) {
  fs::path link = Host(host_path);
  fs::create_directories(link.parent_path());
  fs::create_directory_symlink(
      fs::path(Host(target)).lexically_relative(link.parent_path()), link);
}

void FakeHost::AddBaseline() {
  Write("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
  Write("/proc/sys/kernel/modules_disabled", "0\n");
  Write("/proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro quiet "
        "intel_iommu=on iommu=pt\n");
  Write("/proc/modules", "");
  Write("/boot/config-6.1.0-18-amd64",
        "CONFIG_MODULES=y\nCONFIG_ZONE_DEVICE=y\nCONFIG_MEMORY_HOTPLUG=y\n"
        "CONFIG_DMA_SHARED_BUFFER=y\nCONFIG_PCI_P2PDMA=y\n");
  Write("/sys/class/iommu/dmar0/uevent", "");
  Mkdir("/sys/kernel/iommu_groups/0");
  Mkdir("/sys/class/block");
  Mkdir("/dev");
  Write("/sys/module/nvidia/version", "550.54.14\n");
  Write("/sys/module/nvidia/taint", "OE\n");
  Write("/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  "
        "Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 "
        "UTC 2024\n");
}

void FakeHost::AddPciDevice(const std::string& path, uint32_t vendor,
                            uint32_t device, uint32_t pci_class,
                            const std::string& resource, int numa_node) {
  std::string dir = "/sys/devices/" + path;
  Write(dir + "/vendor", absl::StrFormat("0x%04x\n", vendor));
  Write(dir + "/device", absl::StrFormat("0x%04x\n", device));
  Write(dir + "/class", absl::StrFormat("0x%06x\n", pci_class));
  Write(dir + "/resource", resource);
  Write(dir + "/numa_node", absl::StrCat(numa_node, "\n"));
  std::string bdf = fs::path(path).filename();
  Link("/sys/bus/pci/devices/" + bdf, dir);
}

void FakeHost::AddGpu(const std::string& path, int numa_node,
                      const std::string& resource) {
  AddPciDevice(path, 0x10de, 0x2330, 0x030200, resource, numa_node);
  Mkdir("/sys/bus/pci/drivers/nvidia");
  Link("/sys/devices/" + path + "/driver", "/sys/bus/pci/drivers/nvidia");
}

void FakeHost::AddNvme(const std::string& ctrl, const std::string& path,
                       int numa_node) {
  AddPciDevice(path, 0x144d, 0xa80a, 0x010802, kNvmeResource, numa_node);
  Write("/sys/class/nvme/" + ctrl + "/transport", "pcie\n");
  Link("/sys/class/nvme/" + ctrl + "/device", "/sys/devices/" + path);
  std::string ns = ctrl + "n1";
  Mkdir("/sys/class/block/" + ns);
  Mkdir("/sys/class/block/" + ns + "p1");  // a partition: not a namespace
  Write("/dev/" + ns, "");
}

void FakeHost::AddFgdsModule(const std::vector<std::string>& nodes_for) {
  Write("/sys/module/fgds/version", "0.1.0\n");
  for (const std::string& bdf : nodes_for) {
    std::string name = absl::StrReplaceAll(bdf, {{":", "_"}, {".", "_"}});
    Write("/dev/fgds_" + name, "");
  }
}

}  // namespace fgds::probe
