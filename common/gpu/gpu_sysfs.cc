#include "common/gpu/gpu_sysfs.h"

#include <dirent.h>
#include <linux/mempolicy.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fgds::gpu {
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

std::string Join(std::string_view root, std::string_view rest) {
  std::string out(root);
  if (!out.empty() && out.back() == '/') out.pop_back();
  out += rest;
  return out;
}

// The first line of a small sysfs/proc file, without the newline; false
// when it cannot be read.
bool ReadLine(const std::string& path, std::string* line) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return false;
  char buf[256];
  const bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
  std::fclose(f);
  if (!ok) return false;
  line->assign(buf);
  while (!line->empty() && (line->back() == '\n' || line->back() == ' ')) {
    line->pop_back();
  }
  return true;
}

bool ReadHex(const std::string& path, unsigned long* value) {
  std::string line;
  if (!ReadLine(path, &line) || line.empty()) return false;
  char* end = nullptr;
  *value = std::strtoul(line.c_str(), &end, 16);
  return end != nullptr && *end == '\0';
}

}  // namespace

int PciNumaNode(std::string_view sysfs_root, std::string_view bdf) {
  const std::string pci = NormalizePciBusId(bdf);
  if (pci.empty()) return -1;
  std::string line;
  if (!ReadLine(Join(sysfs_root, "/bus/pci/devices/" + pci + "/numa_node"),
                &line)) {
    return -1;
  }
  char* end = nullptr;
  const long node = std::strtol(line.c_str(), &end, 10);
  // mbind's mask below holds 64 nodes; past that, no preference.
  if (end == line.c_str() || *end != '\0' || node < 0 || node >= 64) {
    return -1;
  }
  struct stat st;
  const std::string dir =
      Join(sysfs_root, "/devices/system/node/node" + std::to_string(node));
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return -1;
  return static_cast<int>(node);
}

uint64_t PciApertureBytes(std::string_view sysfs_root, std::string_view bdf) {
  const std::string pci = NormalizePciBusId(bdf);
  if (pci.empty()) return 0;
  FILE* f = std::fopen(
      Join(sysfs_root, "/bus/pci/devices/" + pci + "/resource").c_str(), "re");
  if (f == nullptr) return 0;
  // One "start end flags" line per resource, in hex; unassigned ones are 0.
  constexpr unsigned long long kMem = 0x200;        // IORESOURCE_MEM
  constexpr unsigned long long kPrefetch = 0x2000;  // IORESOURCE_PREFETCH
  unsigned long long start = 0, end = 0, flags = 0;
  uint64_t best = 0;
  char line[128];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3) {
      continue;
    }
    if ((flags & kMem) == 0 || (flags & kPrefetch) == 0 || end <= start) {
      continue;
    }
    best = std::max<uint64_t>(best, end - start + 1);
  }
  std::fclose(f);
  return best;
}

std::string NvidiaGpuUuid(std::string_view proc_root, std::string_view bdf) {
  const std::string pci = NormalizePciBusId(bdf);
  if (pci.empty()) return "";
  const std::string path =
      Join(proc_root, "/driver/nvidia/gpus/" + pci + "/information");
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return "";
  // "GPU UUID: \t GPU-5e0c0e4a-...": one of a dozen short lines.
  char buf[256];
  std::string uuid;
  while (std::fgets(buf, sizeof(buf), f) != nullptr) {
    std::string_view line(buf);
    constexpr std::string_view kKey = "GPU UUID:";
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      line.remove_prefix(1);
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
      line.remove_suffix(1);
    }
    uuid.assign(line);
    break;
  }
  std::fclose(f);
  for (char& c : uuid)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return uuid;
}

std::vector<GpuIdentity> ListNvidiaGpus(std::string_view sysfs_root,
                                        std::string_view proc_root) {
  std::vector<GpuIdentity> gpus;
  const std::string dir_path = Join(sysfs_root, "/bus/pci/devices");
  DIR* dir = opendir(dir_path.c_str());
  if (dir == nullptr) return gpus;
  while (dirent* entry = readdir(dir)) {
    const std::string pci = NormalizePciBusId(entry->d_name);
    if (pci.empty()) continue;
    unsigned long vendor = 0;
    unsigned long pci_class = 0;
    const std::string base = dir_path + "/" + entry->d_name;
    if (!ReadHex(base + "/vendor", &vendor) || vendor != kNvidiaVendor ||
        !ReadHex(base + "/class", &pci_class) || (pci_class >> 16) != 0x03) {
      continue;
    }
    GpuIdentity gpu;
    gpu.pci_bus_id = pci;
    gpus.push_back(std::move(gpu));
  }
  closedir(dir);
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuIdentity& a, const GpuIdentity& b) {
              return a.pci_bus_id < b.pci_bus_id;
            });
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].index = static_cast<int>(i);
    gpus[i].uuid = NvidiaGpuUuid(proc_root, gpus[i].pci_bus_id);
  }
  return gpus;
}

int PreferNumaNode(void* addr, size_t len, int node) {
  constexpr int kMaxNode = 64;
  if (node < 0) return 0;
  if (node >= kMaxNode) return -EINVAL;
  unsigned long mask = 1UL << node;
  if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, &mask, kMaxNode + 1, 0) !=
      0) {
    return -errno;
  }
  return 0;
}

}  // namespace fgds::gpu
