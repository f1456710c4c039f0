// File: tools/probe/kconfig.h
//
// The running kernel's build configuration, as in /boot/config-$(uname -r)
// or /proc/config.gz, and what the direct path needs of it.
#ifndef FGDS_TOOLS_PROBE_KCONFIG_H_
#define FGDS_TOOLS_PROBE_KCONFIG_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/probe/check.h"

namespace fgds::probe {

// Symbol name ("CONFIG_ZONE_DEVICE") -> value ("y", "m", "n", "0x1000",
// "\"string\""). "# CONFIG_X is not set" is stored as "n".
using KernelConfig = std::map<std::string, std::string, std::less<>>;

// ParseKernelConfig reads a .config. Lines it does not understand are
// skipped: the file is the kernel's, not a user's.
KernelConfig ParseKernelConfig(absl::string_view text);

// ConfigValue returns the symbol's value, "n" when it is absent (absent
// means its dependencies were not met, which is "not set" too).
std::string ConfigValue(const KernelConfig& config, absl::string_view symbol);

// GunzipFile returns the inflated contents of the gzip file at `path`
// (/proc/config.gz), by running `gzip -dc` (gzip is essential on Debian;
// this keeps zlib out of the build dependencies).
absl::StatusOr<std::string> GunzipFile(const std::string& path);

// CheckConfigSymbol judges one symbol the direct path depends on:
// CONFIG_MODULES, CONFIG_ZONE_DEVICE, CONFIG_MEMORY_HOTPLUG and
// CONFIG_DMA_SHARED_BUFFER are required (FAIL when not set);
// CONFIG_PCI_P2PDMA is only advisory (warn: the module then relies on its
// own topology check).
Check CheckConfigSymbol(const KernelConfig& config, absl::string_view symbol);

// The symbols `fgds probe` checks, in print order.
inline constexpr absl::string_view kConfigSymbols[] = {
    "CONFIG_MODULES", "CONFIG_ZONE_DEVICE", "CONFIG_MEMORY_HOTPLUG",
    "CONFIG_DMA_SHARED_BUFFER", "CONFIG_PCI_P2PDMA"};

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_KCONFIG_H_
