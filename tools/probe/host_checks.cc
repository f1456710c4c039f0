// Kernel, kernel config, IOMMU and NVIDIA driver lines.
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/probe/checks.h"
#include "tools/probe/iommu.h"
#include "tools/probe/kconfig.h"
#include "tools/probe/nvidia.h"

namespace fgds::probe {
namespace {

std::string Release(const HostFs& fs) {
  return fs.ReadLine("/proc/sys/kernel/osrelease");
}

// LoadConfig finds the running kernel's config; `source` names the file.
std::optional<KernelConfig> LoadConfig(const HostFs& fs, std::string* source) {
  std::string boot = "/boot/config-" + Release(fs);
  if (absl::StatusOr<std::string> text = fs.Read(boot); text.ok()) {
    *source = boot;
    return ParseKernelConfig(*text);
  }
  if (fs.Exists("/proc/config.gz")) {
    absl::StatusOr<std::string> text = GunzipFile(fs.Path("/proc/config.gz"));
    if (text.ok()) {
      *source = "/proc/config.gz";
      return ParseKernelConfig(*text);
    }
  }
  return std::nullopt;
}

}  // namespace

void AddKernelChecks(const HostFs& fs, std::vector<Check>* out) {
  std::string release = Release(fs);
  if (release.empty()) {
    out->push_back(MakeCheck("kernel", Level::kSkip,
                             "unknown (no /proc/sys/kernel/osrelease)"));
    return;
  }
  std::vector<absl::string_view> parts =
      absl::StrSplit(release, absl::ByAnyChar(".-"));
  int major = 0, minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor)) {
    out->push_back(MakeCheck("kernel", Level::kWarn, release,
                             "cannot parse the release; 5.12+ is needed"));
  } else if (major < kMinKernelMajor ||
             (major == kMinKernelMajor && minor < kMinKernelMinor)) {
    out->push_back(MakeCheck(
        "kernel", Level::kFail, release,
        absl::StrCat("dma-buf peer-to-peer import needs Linux ",
                     kMinKernelMajor, ".", kMinKernelMinor, " or newer")));
  } else {
    out->push_back(MakeCheck("kernel", Level::kOk, release));
  }
  if (fs.ReadLine("/proc/sys/kernel/modules_disabled") == "1") {
    out->push_back(MakeCheck(
        "module loading", Level::kFail, "disabled (modules_disabled=1)",
        "module loading was switched off since boot; reboot and load fgds "
        "before whatever sets kernel.modules_disabled"));
  }
}

void AddConfigChecks(const HostFs& fs, std::vector<Check>* out) {
  std::string source;
  std::optional<KernelConfig> config = LoadConfig(fs, &source);
  if (!config) {
    out->push_back(MakeCheck(
        "kernel config", Level::kSkip,
        "unknown (no /boot/config-" + Release(fs) + " nor /proc/config.gz)"));
    return;
  }
  out->push_back(MakeCheck("kernel config", Level::kOk, source));
  for (absl::string_view symbol : kConfigSymbols) {
    out->push_back(CheckConfigSymbol(*config, symbol));
  }
}

void AddIommuCheck(const HostFs& fs, const Inventory& inventory,
                   std::vector<Check>* out) {
  IommuFacts facts;
  facts.cmdline = fs.ReadLine("/proc/cmdline");
  if (auto names = fs.List("/sys/class/iommu"); names.ok()) {
    facts.iommus = *names;
  }
  if (auto names = fs.List("/sys/kernel/iommu_groups"); names.ok()) {
    facts.group_count = static_cast<int>(names->size());
  }
  auto add_domain = [&facts](const PciDevice& dev) {
    if (!dev.iommu_domain.empty()) {
      facts.device_domains.push_back(dev.bdf + "=" + dev.iommu_domain);
    }
  };
  for (const PciDevice& gpu : inventory.gpus) add_domain(gpu);
  for (const NvmeController& ctrl : inventory.nvme) {
    if (ctrl.pci) add_domain(*ctrl.pci);
  }
  std::string source;
  if (std::optional<KernelConfig> config = LoadConfig(fs, &source)) {
    if (ConfigValue(*config, "CONFIG_IOMMU_DEFAULT_PASSTHROUGH") == "y") {
      facts.config_default = "passthrough";
    } else if (ConfigValue(*config, "CONFIG_IOMMU_DEFAULT_DMA_STRICT") == "y" ||
               ConfigValue(*config, "CONFIG_IOMMU_DEFAULT_DMA_LAZY") == "y") {
      facts.config_default = "translated";
    }
  }
  out->push_back(IommuCheck(DecideIommuMode(facts)));
}

bool AddNvidiaChecks(const HostFs& fs, const Inventory& inventory,
                     std::vector<Check>* out) {
  NvidiaDriver driver;
  driver.loaded = fs.Exists("/sys/module/nvidia");
  driver.drm_loaded = fs.Exists("/sys/module/nvidia_drm");
  if (driver.loaded) {
    driver.version = fs.ReadLine("/sys/module/nvidia/version");
    if (auto text = fs.Read("/proc/driver/nvidia/version"); text.ok()) {
      driver.flavor = FlavorFromProcVersion(*text);
    }
    if (driver.flavor == NvidiaFlavor::kUnknown) {
      driver.flavor = FlavorFromTaint(fs.ReadLine("/sys/module/nvidia/taint"));
    }
  }
  bool have_gpu = !inventory.gpus.empty();
  out->push_back(NvidiaModuleCheck(driver, have_gpu));
  if (driver.loaded) out->push_back(DmaBufCheck(driver));
  if (driver.loaded || driver.drm_loaded) {
    out->push_back(NvidiaDrmCheck(driver));
  }
  return driver.loaded && have_gpu;
}

}  // namespace fgds::probe
