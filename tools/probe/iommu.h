// File: tools/probe/iommu.h
//
// How the IOMMU treats DMA from the GPU and the NVMe device. The direct
// path hands the NVMe device the GPU BAR's CPU physical address, which is
// only right when the IOMMU is off or in passthrough (identity) mode for
// them; in translated mode the NVMe device's DMA to that address faults.
#ifndef FGDS_TOOLS_PROBE_IOMMU_H_
#define FGDS_TOOLS_PROBE_IOMMU_H_

#include <string>
#include <vector>

#include "tools/probe/check.h"

namespace fgds::probe {

enum class IommuMode { kOff, kPassthrough, kTranslated, kUnknown };

struct IommuFacts {
  std::string cmdline;              // /proc/cmdline
  std::vector<std::string> iommus;  // /sys/class/iommu entries
  int group_count = 0;              // /sys/kernel/iommu_groups
  // iommu_group/type of the GPU and NVMe devices ("identity", "DMA",
  // "DMA-FQ", "unmanaged", "blocked"), each as "<bdf>=<type>"; empty
  // when the kernel has no such attribute or the device no group.
  std::vector<std::string> device_domains;
  // From the kernel config: "passthrough", "translated" or "" (unknown).
  std::string config_default;
};

struct IommuResult {
  IommuMode mode;
  std::string detail;  // how it was decided
};

// DecideIommuMode: the devices' own domain types win; else no IOMMU
// registered means off; else the last iommu / intel_iommu / amd_iommu /
// iommu.passthrough option on the command line; else the kernel's
// configured default.
IommuResult DecideIommuMode(const IommuFacts& facts);

// IommuCheck turns the result into the probe line.
Check IommuCheck(const IommuResult& result);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_IOMMU_H_
