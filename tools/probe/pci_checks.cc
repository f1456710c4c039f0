// GPU, NVMe and GPU x NVMe topology lines.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/probe/checks.h"
#include "tools/probe/topology.h"

namespace fgds::probe {
namespace {

// A BAR1 this small holds little besides the driver's own mappings.
constexpr uint64_t kSmallBar1 = uint64_t{256} << 20;

std::string NumaText(int node) {
  return node < 0 ? "" : absl::StrCat(", NUMA ", node);
}

Check GpuCheck(const PciDevice& gpu) {
  std::string name = "gpu " + gpu.bdf;
  std::string id = absl::StrFormat("[%04x:%04x]", gpu.vendor, gpu.device);
  const PciResource* bar1 = gpu.aperture();
  if (bar1 == nullptr) {
    return MakeCheck(
        name, Level::kFail,
        absl::StrCat(id, " no prefetchable memory BAR (BAR1) assigned",
                     NumaText(gpu.numa_node)),
        "the GPU memory aperture has no address; enable \"Above "
        "4G decoding\" in the firmware setup");
  }
  std::string finding = absl::StrCat(
      id, " BAR", bar1->index, " ", FormatBytes(bar1->size()), " prefetchable",
      bar1->is_64bit() ? " 64-bit" : " 32-bit", NumaText(gpu.numa_node));
  if (gpu.driver != "nvidia") {
    return MakeCheck(
        name, Level::kFail,
        absl::StrCat(finding, ", driver ",
                     gpu.driver.empty() ? "none" : gpu.driver),
        "the GPU must be bound to NVIDIA's driver (not nouveau, vfio-pci); "
        "blacklist nouveau, or unbind it from vfio-pci");
  }
  if (bar1->size() <= kSmallBar1) {
    return MakeCheck(name, Level::kWarn, finding,
                     "a small BAR1 caps registered GPU memory; enable "
                     "Resizable BAR / Above 4G decoding in the firmware");
  }
  return MakeCheck(name, Level::kOk, finding);
}

Check NvmeCheck(const NvmeController& ctrl) {
  std::string name = ctrl.name;
  std::string namespaces = ctrl.namespaces.empty()
                               ? "no namespaces"
                               : absl::StrJoin(ctrl.namespaces, " ");
  if (!ctrl.pci) {
    return MakeCheck(
        name, Level::kSkip,
        absl::StrCat("transport ", ctrl.transport, ", not a local PCIe ",
                     "device (", namespaces, ")"));
  }
  return MakeCheck(name, Level::kOk,
                   absl::StrCat(ctrl.pci->bdf, " (", namespaces, ")",
                                NumaText(ctrl.pci->numa_node)));
}

Check RouteCheck(const PciDevice& gpu, const NvmeController& ctrl) {
  Check check;
  check.name = absl::StrCat("route ", gpu.bdf, " <-> ", ctrl.name);
  check.group = "GPU-NVMe route";
  const PciDevice& nvme = *ctrl.pci;
  if (!gpu.location || !nvme.location) {
    check.level = Level::kSkip;
    check.finding = "PCI path unknown";
    return check;
  }
  RouteResult route = ClassifyRoute(*gpu.location, gpu.numa_node,
                                    *nvme.location, nvme.numa_node);
  switch (route.route) {
    case Route::kSameSwitch:
      check.level = Level::kOk;
      check.finding = "same PCIe switch (" + route.detail + ")";
      break;
    case Route::kSameRootComplex:
      check.level = Level::kWarn;
      check.finding = "same root complex only (" + route.detail + ")";
      check.hint =
          "traffic turns around in the host bridge, which forwards P2P only "
          "on some CPUs; a PCIe switch holding both is the safe layout";
      break;
    case Route::kCrossRootComplex:
      check.level = Level::kFail;
      check.finding = "different root complexes (" + route.detail + ")";
      check.hint =
          "P2P between root complexes or sockets is not supported; use an "
          "NVMe drive under the GPU's root complex (ideally its switch)";
      break;
  }
  return check;
}

}  // namespace

void AddPciChecks(const Inventory& inventory, std::vector<Check>* out) {
  if (inventory.gpus.empty()) {
    out->push_back(MakeCheck(
        "gpu", Level::kFail, "no NVIDIA GPU",
        "no PCI device with vendor 0x10de and class 0x03xxxx; in a VM or "
        "container, pass the GPU through"));
  }
  // The GPUs come in PCI address order (ScanInventory), the order in which
  // `fgds mount --gpus` numbers them: say each one's number.
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    Check check = GpuCheck(inventory.gpus[i]);
    absl::StrAppend(&check.finding, ", --gpus index ", i);
    out->push_back(std::move(check));
  }

  bool have_pci_nvme = false;
  for (const NvmeController& ctrl : inventory.nvme) {
    out->push_back(NvmeCheck(ctrl));
    have_pci_nvme |= ctrl.pci.has_value();
  }
  if (!have_pci_nvme) {
    out->push_back(MakeCheck(
        "nvme", Level::kFail, "no local PCIe NVMe controller",
        "the direct path reads from NVMe drives on this host's PCIe; other "
        "storage goes through the bounce path"));
  }
  size_t pairs = 0;
  for (const NvmeController& ctrl : inventory.nvme) pairs += ctrl.pci ? 1 : 0;
  pairs *= inventory.gpus.size();
  for (const PciDevice& gpu : inventory.gpus) {
    std::vector<Check> routes;
    std::vector<std::string> labels;
    for (const NvmeController& ctrl : inventory.nvme) {
      if (!ctrl.pci) continue;
      routes.push_back(RouteCheck(gpu, ctrl));
      labels.push_back(ctrl.name);
    }
    if (routes.empty()) continue;
    if (pairs > kMaxPairLines) {
      out->push_back(Fold("route " + gpu.bdf, routes, labels));
    } else {
      out->insert(out->end(), routes.begin(), routes.end());
    }
  }
}

}  // namespace fgds::probe
