// File: tools/probe/pci_resource.h
//
// A PCI device's BARs, from /sys/bus/pci/devices/<bdf>/resource: one line
// per resource, "0x<start> 0x<end> 0x<flags>"; lines 0-5 are the BARs, 6 the
// expansion ROM, then bridge windows. A 64-bit BAR takes two BAR numbers;
// the second reads as zeros.
#ifndef FGDS_TOOLS_PROBE_PCI_RESOURCE_H_
#define FGDS_TOOLS_PROBE_PCI_RESOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgds::probe {

// IORESOURCE_* flags (include/linux/ioport.h) as sysfs prints them.
inline constexpr uint64_t kResourceIo = 0x100;
inline constexpr uint64_t kResourceMem = 0x200;
inline constexpr uint64_t kResourcePrefetch = 0x2000;
inline constexpr uint64_t kResourceMem64 = 0x100000;

struct PciResource {
  int index = 0;  // line number: BAR number for 0-5
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t flags = 0;

  // Size in bytes; 0 for an unused or unassigned resource.
  uint64_t size() const { return end > start ? end - start + 1 : 0; }
  bool is_memory() const { return (flags & kResourceMem) != 0; }
  bool prefetchable() const { return (flags & kResourcePrefetch) != 0; }
  bool is_64bit() const { return (flags & kResourceMem64) != 0; }
};

// ParseResourceFile parses the whole `resource` file.
absl::StatusOr<std::vector<PciResource>> ParseResourceFile(
    absl::string_view text);

// ParseHexNumber parses "0x10de" or "0x030000\n" (sysfs vendor, class).
absl::StatusOr<uint64_t> ParseHexNumber(absl::string_view text);

// FormatBytes renders a size the way people name BARs: "16 MiB",
// "64 GiB", "1.5 GiB", "4096 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_PCI_RESOURCE_H_
