// File: tools/probe/pci_inventory.h
//
// The NVIDIA GPUs and NVMe controllers of the host, read from sysfs:
// /sys/bus/pci/devices/<bdf>/{vendor,device,class,resource,numa_node,
// iommu_group/type} and /sys/class/nvme/<ctrl>/{device,transport}.
#ifndef FGDS_TOOLS_PROBE_PCI_INVENTORY_H_
#define FGDS_TOOLS_PROBE_PCI_INVENTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/probe/host_fs.h"
#include "tools/probe/pci_resource.h"
#include "tools/probe/topology.h"

namespace fgds::probe {

inline constexpr uint32_t kNvidiaVendor = 0x10de;

struct PciDevice {
  std::string bdf;  // "0000:3b:00.0"
  uint32_t vendor = 0;
  uint32_t device = 0;
  uint32_t pci_class = 0;               // 0x030200: 3D controller
  int numa_node = -1;                   // -1: unknown or single node
  std::optional<PciLocation> location;  // unset when the path is odd
  std::string iommu_domain;             // iommu_group/type; "" when none
  std::string driver;  // bound driver ("nvidia", "nouveau"); "" when none
  std::vector<PciResource> resources;

  // bar(i) returns resource i, or nullptr.
  const PciResource* bar(int index) const;
  // aperture() returns the GPU memory window the fgds module maps: the
  // largest prefetchable memory BAR (NVIDIA calls it BAR1, but its PCI
  // index varies: 2 when BAR0 is 64-bit, as on an H200 in a VM), or
  // nullptr when no prefetchable memory BAR is assigned.
  const PciResource* aperture() const;
};

struct NvmeController {
  std::string name;                     // "nvme0"
  std::string transport;                // "pcie", "tcp", "rdma", "fc", "loop"
  std::optional<PciDevice> pci;         // set for a local PCIe controller
  std::vector<std::string> namespaces;  // block devices: "nvme0n1"
};

struct Inventory {
  std::vector<PciDevice> gpus;  // vendor 0x10de, class 0x03xxxx
  std::vector<NvmeController> nvme;
};

// ReadPciDevice reads one device's attributes; missing optional ones
// (numa_node, iommu_group) are left at their defaults.
absl::StatusOr<PciDevice> ReadPciDevice(const HostFs& fs,
                                        absl::string_view bdf);

// ScanInventory lists the GPUs and NVMe controllers. Devices whose
// attributes cannot be read are skipped; a missing /sys/class/nvme means
// no NVMe.
Inventory ScanInventory(const HostFs& fs);

// NamespaceOf reports whether block device `block` ("nvme0n1", not a
// partition) belongs to controller `ctrl` ("nvme0"). With native NVMe
// multipath the number is the subsystem's; for one controller per
// subsystem, the usual case, the two agree.
bool NamespaceOf(absl::string_view block, absl::string_view ctrl);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_PCI_INVENTORY_H_
