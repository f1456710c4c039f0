#include "tools/probe/nvidia.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace fgds::probe {

NvidiaFlavor FlavorFromProcVersion(absl::string_view text) {
  absl::string_view first = text.substr(0, text.find('\n'));
  if (absl::StrContains(first, "Open Kernel Module")) {
    return NvidiaFlavor::kOpen;
  }
  if (absl::StrContains(first, "Kernel Module")) {
    return NvidiaFlavor::kProprietary;
  }
  return NvidiaFlavor::kUnknown;
}

NvidiaFlavor FlavorFromTaint(absl::string_view taint) {
  if (absl::StrContains(taint, 'P')) return NvidiaFlavor::kProprietary;
  // An out-of-tree module is tainted O (and E when unsigned); without P
  // its license is GPL-compatible, which only the open module is.
  if (absl::StrContains(taint, 'O')) return NvidiaFlavor::kOpen;
  return NvidiaFlavor::kUnknown;
}

int DriverMajor(absl::string_view version) {
  int major;
  if (!absl::SimpleAtoi(version.substr(0, version.find('.')), &major)) {
    return -1;
  }
  return major;
}

Check NvidiaModuleCheck(const NvidiaDriver& driver, bool have_gpu) {
  if (driver.loaded) {
    return MakeCheck(
        "nvidia module", Level::kOk,
        absl::StrCat("loaded, version ",
                     driver.version.empty() ? "unknown" : driver.version));
  }
  if (!have_gpu) {
    return MakeCheck("nvidia module", Level::kSkip, "not loaded (no GPU)");
  }
  return MakeCheck(
      "nvidia module", Level::kFail, "not loaded",
      "install NVIDIA's open kernel module (e.g. "
      "nvidia-open / nvidia-kernel-open-dkms) and modprobe nvidia");
}

Check DmaBufCheck(const NvidiaDriver& driver) {
  if (!driver.loaded) {
    return MakeCheck("gpu dma-buf", Level::kSkip, "nvidia module not loaded");
  }
  int major = DriverMajor(driver.version);
  std::string release =
      major < 0 ? "unknown release" : absl::StrCat("release ", major);
  switch (driver.flavor) {
    case NvidiaFlavor::kProprietary:
      return MakeCheck(
          "gpu dma-buf", Level::kFail,
          absl::StrCat("proprietary module, ", release),
          "dma-buf export of GPU memory needs NVIDIA's open kernel module "
          "(assumed: open module >= 515); install the open flavour of the "
          "same driver");
    case NvidiaFlavor::kUnknown:
      return MakeCheck(
          "gpu dma-buf", Level::kWarn,
          absl::StrCat("module flavour unknown, ", release),
          "cannot tell open from proprietary (no /proc/driver/nvidia/"
          "version); dma-buf export needs the open module >= 515");
    case NvidiaFlavor::kOpen:
      break;
  }
  if (major >= 0 && major < kMinDmaBufDriverMajor) {
    return MakeCheck(
        "gpu dma-buf", Level::kFail, absl::StrCat("open module, ", release),
        absl::StrCat("dma-buf export is assumed to need release >= ",
                     kMinDmaBufDriverMajor, "; upgrade the driver"));
  }
  if (major < 0) {
    return MakeCheck("gpu dma-buf", Level::kWarn,
                     "open module, release unknown",
                     "dma-buf export is assumed to need release >= 515");
  }
  return MakeCheck("gpu dma-buf", Level::kOk,
                   absl::StrCat("open module, ", release,
                                " (assumed to export dma-buf from 515)"));
}

Check NvidiaDrmCheck(const NvidiaDriver& driver) {
  if (!driver.drm_loaded) {
    return MakeCheck("nvidia_drm", Level::kOk, "not loaded");
  }
  return MakeCheck(
      "nvidia_drm", Level::kWarn, "loaded",
      "it may map the BAR write-combined first, and x86 PAT then refuses "
      "fgds's mapping (\"conflicting memory types\"); on a headless host "
      "blacklist nvidia_drm (and nvidia_modeset)");
}

}  // namespace fgds::probe
