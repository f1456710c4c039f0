#include "tools/probe/topology.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fgds::probe {
namespace {

bool AllHex(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isxdigit(static_cast<unsigned char>(c));
  });
}

// "pci0000:00" or "pci10000:e0".
bool IsHostBridge(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "pci")) return false;
  size_t colon = name.find(':');
  return colon != absl::string_view::npos && AllHex(name.substr(0, colon)) &&
         AllHex(name.substr(colon + 1));
}

}  // namespace

bool IsPciAddress(absl::string_view name) {
  // DDDD:BB:DD.F
  std::vector<absl::string_view> parts = absl::StrSplit(name, ':');
  if (parts.size() != 3) return false;
  size_t dot = parts[2].find('.');
  if (dot == absl::string_view::npos) return false;
  return parts[0].size() >= 4 && AllHex(parts[0]) && parts[1].size() == 2 &&
         AllHex(parts[1]) && dot == 2 && AllHex(parts[2].substr(0, 2)) &&
         parts[2].size() == 4 && AllHex(parts[2].substr(3));
}

absl::StatusOr<PciLocation> ParsePciSysfsPath(absl::string_view path) {
  PciLocation location;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (location.host_bridge.empty()) {
      if (IsHostBridge(part)) location.host_bridge = std::string(part);
      continue;
    }
    if (IsPciAddress(part)) location.chain.emplace_back(part);
  }
  if (location.host_bridge.empty() || location.chain.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a PCI device path: ", path));
  }
  return location;
}

RouteResult ClassifyRoute(const PciLocation& a, int numa_a,
                          const PciLocation& b, int numa_b) {
  if (a.host_bridge != b.host_bridge) {
    std::string detail = absl::StrCat(a.host_bridge, " vs ", b.host_bridge);
    if (numa_a >= 0 && numa_b >= 0 && numa_a != numa_b) {
      absl::StrAppend(&detail, ", NUMA ", numa_a, " vs ", numa_b);
    }
    return {Route::kCrossRootComplex, detail};
  }
  if (numa_a >= 0 && numa_b >= 0 && numa_a != numa_b) {
    return {Route::kCrossRootComplex,
            absl::StrCat("NUMA ", numa_a, " vs ", numa_b)};
  }
  // The bridges above each device: every chain element but the last.
  size_t common = 0;
  while (common + 1 < a.chain.size() && common + 1 < b.chain.size() &&
         a.chain[common] == b.chain[common]) {
    ++common;
  }
  if (common == 0) {
    return {Route::kSameRootComplex, absl::StrCat("via ", a.host_bridge)};
  }
  // The first chain element is the root port; a common bridge below it is
  // a switch port, so traffic turns around without reaching the CPU.
  absl::string_view kind = common == 1 ? "root port" : "switch";
  return {Route::kSameSwitch,
          absl::StrCat("via ", kind, " ", a.chain[common - 1])};
}

}  // namespace fgds::probe
