// File: tools/probe/topology.h
//
// Where two PCI devices meet: whether a GPU and an NVMe controller share a
// PCIe switch (peer-to-peer traffic stays below it), only a root complex
// (it must cross the host bridge, which not every CPU forwards), or
// nothing (different root complexes or sockets: not supported).
//
// The input is the resolved sysfs path of each device, as
//   readlink -f /sys/bus/pci/devices/0000:03:00.0
//   = /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/
//     0000:03:00.0
// whose components after the host bridge ("pci0000:00") are the chain of
// bridges from the root port down to the device itself.
#ifndef FGDS_TOOLS_PROBE_TOPOLOGY_H_
#define FGDS_TOOLS_PROBE_TOPOLOGY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgds::probe {

struct PciLocation {
  std::string host_bridge;         // "pci0000:00"
  std::vector<std::string> chain;  // root port ... device; never empty
};

// IsPciAddress reports whether `name` looks like "0000:3b:00.0" (the
// domain may be longer, as behind Intel VMD).
bool IsPciAddress(absl::string_view name);

// ParsePciSysfsPath parses a resolved device path. The host bridge is the
// first "pciDDDD:BB" component; non-PCI components after it are skipped.
absl::StatusOr<PciLocation> ParsePciSysfsPath(absl::string_view path);

enum class Route {
  kSameSwitch,        // a common bridge below the host bridge
  kSameRootComplex,   // only the host bridge in common
  kCrossRootComplex,  // different host bridges or NUMA nodes
};

struct RouteResult {
  Route route;
  std::string detail;  // "via 0000:01:00.0", "pci0000:00 vs pci0000:80"
};

// ClassifyRoute decides the route between devices `a` and `b`. NUMA nodes
// are compared when both are known (>= 0).
RouteResult ClassifyRoute(const PciLocation& a, int numa_a,
                          const PciLocation& b, int numa_b);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_TOPOLOGY_H_
