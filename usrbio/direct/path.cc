#include "usrbio/direct/path.h"

#include <unistd.h>

#include "common/kmod/device_node.h"
#include "fgds/fgds.h"

namespace fgds::direct {

PathChoice ChoosePath(const DirectProbe& probe) {
  PathChoice choice;
  choice.path = FGDS_GPU_PATH_BOUNCE;
  if (!probe.dmabuf_supported) {
    choice.why_not_direct =
        "the GPU cannot export its memory as a dma-buf "
        "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: needs the open NVIDIA "
        "kernel modules)";
  } else if (probe.device_node.empty()) {
    choice.why_not_direct =
        "the GPU's PCI address is unknown, so its fgds device node cannot be "
        "found";
  } else if (!probe.device_node_present) {
    choice.why_not_direct =
        probe.device_node +
        " does not exist: the fgds kernel module is not loaded (or not bound "
        "to this GPU)";
  } else {
    choice.path = FGDS_GPU_PATH_DIRECT;
  }
  return choice;
}

DirectProbe ProbeDirect(bool dmabuf_supported, std::string_view pci_bus_id) {
  DirectProbe probe;
  probe.dmabuf_supported = dmabuf_supported;
  probe.device_node = kmod::FgdsDeviceNode(pci_bus_id);
  probe.device_node_present = !probe.device_node.empty() &&
                              access(probe.device_node.c_str(), F_OK) == 0;
  return probe;
}

}  // namespace fgds::direct
