#include "common/gpu/gpu_subset.h"

#include <cctype>
#include <cerrno>
#include <cstdio>

namespace fgds::gpu {
namespace {

// More GPUs than any host has; bounds the index parse.
constexpr int kMaxIndex = 4095;

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

bool AllHex(std::string_view text) {
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return !text.empty();
}

// "GPU-" then 32 hex digits in 8-4-4-4-12 groups (also "MIG-" is not a
// GPU: MIG instances are not separate PCI functions, so they cannot be
// told apart here).
bool IsUuid(std::string_view text) {
  if (text.size() != 40) return false;
  const std::string lower = Lower(text.substr(0, 4));
  if (lower != "gpu-") return false;
  std::string_view rest = text.substr(4);
  const size_t groups[] = {8, 4, 4, 4, 12};
  for (size_t i = 0; i < 5; ++i) {
    if (!AllHex(rest.substr(0, groups[i]))) return false;
    rest.remove_prefix(groups[i]);
    if (i < 4) {
      if (rest.empty() || rest.front() != '-') return false;
      rest.remove_prefix(1);
    }
  }
  return rest.empty();
}

bool ParseIndex(std::string_view text, int* index) {
  if (text.empty() || text.size() > 4) return false;
  int value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > kMaxIndex) return false;
  *index = value;
  return true;
}

}  // namespace

std::string NormalizePciBusId(std::string_view text) {
  // domain:bus:device.function, domain 4+ hex digits (CUDA prints 8 on
  // some versions: "00000000:3B:00.0"), bus 2, device 2, function 1.
  text = Trim(text);
  std::string domain = "0000";
  const size_t first = text.find(':');
  if (first == std::string_view::npos) return "";
  if (text.find(':', first + 1) != std::string_view::npos) {
    std::string_view d = text.substr(0, first);
    if (!AllHex(d) || d.size() > 8) return "";
    unsigned long value = std::stoul(std::string(d), nullptr, 16);
    if (value > 0xffff) return "";
    char buf[8];
    std::snprintf(buf, sizeof(buf), "%04lx", value);
    domain = buf;
    text.remove_prefix(first + 1);
  }
  if (text.size() != 7 || text[2] != ':' || text[5] != '.' ||
      !AllHex(text.substr(0, 2)) || !AllHex(text.substr(3, 2)) ||
      !std::isdigit(static_cast<unsigned char>(text[6])) || text[6] > '7') {
    return "";
  }
  return domain + ":" + Lower(text);
}

int ParseGpuSubset(std::string_view spec, GpuSubset* out,
                   std::string* message) {
  GpuSubset subset;
  subset.spec = std::string(spec);
  const std::string_view whole = Trim(spec);
  if (whole.empty() || Lower(whole) == "all") {
    *out = std::move(subset);
    return 0;
  }
  subset.all = false;
  std::string_view rest = whole;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view entry = Trim(rest.substr(0, comma));
    GpuSubset::Entry parsed;
    if (entry.empty()) {
      *message = "GPU list \"" + subset.spec + "\" has an empty entry";
      return -EINVAL;
    }
    if (ParseIndex(entry, &parsed.index)) {
      parsed.kind = GpuSubset::Entry::Kind::kIndex;
    } else if (IsUuid(entry)) {
      parsed.kind = GpuSubset::Entry::Kind::kUuid;
      parsed.text = Lower(entry);
    } else if (std::string pci = NormalizePciBusId(entry); !pci.empty()) {
      parsed.kind = GpuSubset::Entry::Kind::kPci;
      parsed.text = std::move(pci);
    } else {
      *message = "GPU list \"" + subset.spec + "\": \"" + std::string(entry) +
                 "\" is neither an index (0.." + std::to_string(kMaxIndex) +
                 "), a PCI address (0000:3b:00.0) nor a GPU UUID "
                 "(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)";
      return -EINVAL;
    }
    subset.entries.push_back(std::move(parsed));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  *out = std::move(subset);
  return 0;
}

bool GpuSubset::Contains(const GpuIdentity& gpu) const {
  if (all) return true;
  for (const Entry& e : entries) {
    switch (e.kind) {
      case Entry::Kind::kIndex:
        if (gpu.index >= 0 && gpu.index == e.index) return true;
        break;
      case Entry::Kind::kPci:
        if (!gpu.pci_bus_id.empty() && gpu.pci_bus_id == e.text) return true;
        break;
      case Entry::Kind::kUuid:
        if (!gpu.uuid.empty() && gpu.uuid == e.text) return true;
        break;
    }
  }
  return false;
}

bool GpuAllowList::Allows(std::string_view pci_bus_id) const {
  if (all) return true;
  const std::string pci = NormalizePciBusId(pci_bus_id);
  for (const std::string& allowed : pci_bus_ids) {
    if (!pci.empty() && allowed == pci) return true;
  }
  return false;
}

GpuAllowList ResolveGpuSubset(const GpuSubset& subset,
                              const std::vector<GpuIdentity>& gpus) {
  GpuAllowList list;
  list.all = subset.all;
  list.spec = subset.spec;
  if (subset.all) return list;
  for (const GpuIdentity& gpu : gpus) {
    if (subset.Contains(gpu) && !gpu.pci_bus_id.empty()) {
      list.pci_bus_ids.push_back(gpu.pci_bus_id);
    }
  }
  return list;
}

std::string Describe(const GpuIdentity& gpu) {
  std::string out = "GPU " + (gpu.index >= 0 ? std::to_string(gpu.index) : "?");
  if (!gpu.pci_bus_id.empty()) out += " (" + gpu.pci_bus_id + ")";
  return out;
}

int CheckSubsetNamesGpus(const GpuSubset& subset,
                         const std::vector<GpuIdentity>& gpus,
                         std::string_view what, std::string* message) {
  if (subset.all) return 0;
  for (const GpuSubset::Entry& e : subset.entries) {
    GpuSubset one;
    one.all = false;
    one.entries.push_back(e);
    bool found = false;
    for (const GpuIdentity& gpu : gpus) found = found || one.Contains(gpu);
    if (found) continue;
    std::string there;
    for (const GpuIdentity& gpu : gpus) {
      there += (there.empty() ? "" : ", ") + Describe(gpu);
    }
    *message =
        std::string(what) + "=" + subset.spec + ": \"" +
        (e.kind == GpuSubset::Entry::Kind::kIndex ? std::to_string(e.index)
                                                  : e.text) +
        "\" names no GPU of this host (" +
        (there.empty() ? "none found" : "found " + there) + ")";
    return -ENODEV;
  }
  return 0;
}

}  // namespace fgds::gpu
