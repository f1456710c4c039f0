#include "tools/probe/pci_inventory.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace fgds::probe {
namespace {

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string Basename(absl::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path
                                                      : path.substr(slash + 1));
}

}  // namespace

const PciResource* PciDevice::bar(int index) const {
  for (const PciResource& r : resources) {
    if (r.index == index) return &r;
  }
  return nullptr;
}

const PciResource* PciDevice::aperture() const {
  const PciResource* best = nullptr;
  for (const PciResource& r : resources) {
    if (r.index > 5 || !r.is_memory() || !r.prefetchable() || r.size() == 0) {
      continue;
    }
    if (best == nullptr || r.size() > best->size()) best = &r;
  }
  return best;
}

absl::StatusOr<PciDevice> ReadPciDevice(const HostFs& fs,
                                        absl::string_view bdf) {
  std::string dir = absl::StrCat("/sys/bus/pci/devices/", bdf);
  PciDevice dev;
  dev.bdf = std::string(bdf);
  absl::StatusOr<std::string> vendor = fs.Read(dir + "/vendor");
  if (!vendor.ok()) return vendor.status();
  absl::StatusOr<uint64_t> v = ParseHexNumber(*vendor);
  if (!v.ok()) return v.status();
  dev.vendor = static_cast<uint32_t>(*v);
  if (absl::StatusOr<std::string> t = fs.Read(dir + "/device"); t.ok()) {
    if (absl::StatusOr<uint64_t> d = ParseHexNumber(*t); d.ok()) {
      dev.device = static_cast<uint32_t>(*d);
    }
  }
  if (absl::StatusOr<std::string> t = fs.Read(dir + "/class"); t.ok()) {
    if (absl::StatusOr<uint64_t> c = ParseHexNumber(*t); c.ok()) {
      dev.pci_class = static_cast<uint32_t>(*c);
    }
  }
  int numa;
  if (absl::SimpleAtoi(fs.ReadLine(dir + "/numa_node", "-1"), &numa)) {
    dev.numa_node = numa;
  }
  if (absl::StatusOr<std::string> real = fs.RealPath(dir); real.ok()) {
    if (absl::StatusOr<PciLocation> loc = ParsePciSysfsPath(*real); loc.ok()) {
      dev.location = *std::move(loc);
    }
  }
  dev.iommu_domain = fs.ReadLine(dir + "/iommu_group/type");
  if (absl::StatusOr<std::string> real = fs.RealPath(dir + "/driver");
      real.ok()) {
    dev.driver = Basename(*real);
  }
  if (absl::StatusOr<std::string> t = fs.Read(dir + "/resource"); t.ok()) {
    if (auto r = ParseResourceFile(*t); r.ok()) dev.resources = *std::move(r);
  }
  return dev;
}

bool NamespaceOf(absl::string_view block, absl::string_view ctrl) {
  if (!absl::ConsumePrefix(&block, ctrl) || !absl::ConsumePrefix(&block, "n")) {
    return false;
  }
  return AllDigits(block);  // "nvme0n1" yes, "nvme0n1p2" no
}

Inventory ScanInventory(const HostFs& fs) {
  Inventory inventory;
  if (auto names = fs.List("/sys/bus/pci/devices"); names.ok()) {
    for (const std::string& bdf : *names) {
      absl::StatusOr<PciDevice> dev = ReadPciDevice(fs, bdf);
      if (!dev.ok()) continue;
      if (dev->vendor == kNvidiaVendor && (dev->pci_class >> 16) == 0x03) {
        inventory.gpus.push_back(*std::move(dev));
      }
    }
  }
  std::vector<std::string> blocks;
  if (auto names = fs.List("/sys/class/block"); names.ok()) blocks = *names;
  if (auto names = fs.List("/sys/class/nvme"); names.ok()) {
    for (const std::string& name : *names) {
      absl::string_view number = name;
      if (!absl::ConsumePrefix(&number, "nvme") || !AllDigits(number)) {
        continue;
      }
      NvmeController ctrl;
      ctrl.name = name;
      std::string dir = "/sys/class/nvme/" + name;
      ctrl.transport = fs.ReadLine(dir + "/transport", "unknown");
      if (auto real = fs.RealPath(dir + "/device"); real.ok()) {
        std::string bdf = Basename(*real);
        if (IsPciAddress(bdf)) {
          if (auto dev = ReadPciDevice(fs, bdf); dev.ok()) {
            ctrl.pci = *std::move(dev);
          }
        }
      }
      for (const std::string& block : blocks) {
        if (NamespaceOf(block, name)) ctrl.namespaces.push_back(block);
      }
      inventory.nvme.push_back(std::move(ctrl));
    }
  }
  return inventory;
}

}  // namespace fgds::probe
