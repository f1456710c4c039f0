// File: common/kmod/device_node.h
//
// The name of the fgds module's node for a GPU (kmod/: one char device per
// GPU, /dev/fgds_<domain>_<bus>_<dev>_<fn>). libfgds looks for it to choose
// its path (usrbio/direct/path.h); the daemon opens it for GPU iovs and
// rejects registrations whose PCI address names no node.
#ifndef FGDS_COMMON_KMOD_DEVICE_NODE_H_
#define FGDS_COMMON_KMOD_DEVICE_NODE_H_

#include <string>
#include <string_view>

namespace fgds::kmod {

// FgdsDeviceNode turns a PCI address from cuDeviceGetPCIBusId
// ("0000:3B:00.0") into the module's node, "/dev/fgds_0000_3b_00_0";
// returns "" for text that is not a PCI address.
std::string FgdsDeviceNode(std::string_view pci_bus_id);

}  // namespace fgds::kmod

#endif  // FGDS_COMMON_KMOD_DEVICE_NODE_H_
