#include "tools/probe/iommu.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace fgds::probe {
namespace {

// CmdlineMode applies the IOMMU options of the command line in order (the
// kernel lets the last one win) and returns kUnknown when none decides.
IommuMode CmdlineMode(absl::string_view cmdline, std::string* option) {
  IommuMode mode = IommuMode::kUnknown;
  for (absl::string_view word :
       absl::StrSplit(cmdline, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
    if (word == "--") break;  // the rest belongs to init
    absl::string_view value;
    IommuMode next = IommuMode::kUnknown;
    if (absl::StartsWith(word, "iommu=")) {
      value = word.substr(6);
      for (absl::string_view v : absl::StrSplit(value, ',')) {
        if (v == "pt") next = IommuMode::kPassthrough;
        if (v == "nopt" || v == "force") next = IommuMode::kTranslated;
        if (v == "off") next = IommuMode::kOff;
      }
    } else if (absl::StartsWith(word, "iommu.passthrough=")) {
      value = word.substr(18);
      next = (value == "1" || value == "y" || value == "on")
                 ? IommuMode::kPassthrough
                 : IommuMode::kTranslated;
    } else if (absl::StartsWith(word, "intel_iommu=") ||
               absl::StartsWith(word, "amd_iommu=")) {
      value = word.substr(word.find('=') + 1);
      for (absl::string_view v : absl::StrSplit(value, ',')) {
        if (v == "off") next = IommuMode::kOff;
        // "on" enables translation unless iommu=pt says otherwise; keep a
        // passthrough chosen earlier.
        if (v == "on" && mode != IommuMode::kPassthrough) {
          next = IommuMode::kTranslated;
        }
      }
    }
    if (next != IommuMode::kUnknown) {
      mode = next;
      *option = std::string(word);
    }
  }
  return mode;
}

}  // namespace

IommuResult DecideIommuMode(const IommuFacts& facts) {
  if (!facts.device_domains.empty()) {
    bool all_identity = true;
    for (const std::string& d : facts.device_domains) {
      if (!absl::EndsWith(d, "=identity")) all_identity = false;
    }
    std::string list = absl::StrJoin(facts.device_domains, ", ");
    if (all_identity) {
      return {IommuMode::kPassthrough,
              absl::StrCat("identity domains: ", list)};
    }
    return {IommuMode::kTranslated, absl::StrCat("device domains: ", list)};
  }
  if (facts.iommus.empty() && facts.group_count == 0) {
    return {IommuMode::kOff, "no IOMMU registered (/sys/class/iommu empty)"};
  }
  std::string registered = facts.iommus.empty()
                               ? absl::StrCat(facts.group_count, " groups")
                               : absl::StrJoin(facts.iommus, ",");
  std::string option;
  IommuMode mode = CmdlineMode(facts.cmdline, &option);
  if (mode != IommuMode::kUnknown) {
    return {mode, absl::StrCat(registered, "; cmdline ", option)};
  }
  if (facts.config_default == "passthrough") {
    return {IommuMode::kPassthrough,
            absl::StrCat(registered,
                         "; kernel default CONFIG_IOMMU_DEFAULT_PASSTHROUGH")};
  }
  if (facts.config_default == "translated") {
    return {IommuMode::kTranslated,
            absl::StrCat(registered, "; kernel default is DMA translation")};
  }
  return {IommuMode::kUnknown,
          absl::StrCat(registered, "; default domain type unknown")};
}

Check IommuCheck(const IommuResult& result) {
  switch (result.mode) {
    case IommuMode::kOff:
      return MakeCheck("iommu", Level::kOk, "off: " + result.detail);
    case IommuMode::kPassthrough:
      return MakeCheck("iommu", Level::kOk, "passthrough: " + result.detail);
    case IommuMode::kTranslated:
      return MakeCheck(
          "iommu", Level::kFail, "translated: " + result.detail,
          "NVMe DMA to the GPU BAR's physical address would fault; boot with "
          "iommu=pt (Intel: intel_iommu=on iommu=pt; AMD: amd_iommu=on "
          "iommu=pt) or disable the IOMMU");
    case IommuMode::kUnknown:
      break;
  }
  return MakeCheck("iommu", Level::kWarn, "unknown: " + result.detail,
                   "add iommu=pt to the kernel command line to be sure; "
                   "translated mode breaks the direct path");
}

}  // namespace fgds::probe
