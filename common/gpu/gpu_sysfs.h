// File: common/gpu/gpu_sysfs.h
//
// What the kernel says about a GPU, without CUDA: its NUMA node
// (/sys/bus/pci/devices/<bdf>/numa_node), its UUID (the NVIDIA driver's
// /proc/driver/nvidia/gpus/<bdf>/information) and the list of NVIDIA GPUs
// in PCI order (the daemon's numbering for --gpus); and the memory policy
// call that puts staging memory on a GPU's node. libc only: the daemon and
// the client libraries both use it (STYLE.md 14).
//
// The roots are parameters so that tests point them at a fake tree.
#ifndef FGDS_COMMON_GPU_GPU_SYSFS_H_
#define FGDS_COMMON_GPU_GPU_SYSFS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/gpu/gpu_subset.h"

namespace fgds::gpu {

// PciNumaNode: the NUMA node of PCI device `bdf` (normalized), or -1 when
// the host has no NUMA (the file says -1, or is missing) or the node
// directory /sys/devices/system/node/node<N> does not exist under
// `sysfs_root` (a node the kernel reports but cannot allocate from).
int PciNumaNode(std::string_view sysfs_root, std::string_view bdf);

// PciApertureBytes: the size of the device's largest prefetchable memory
// BAR (a GPU's BAR1, the window the direct path maps GPU memory through),
// from `sysfs_root`/bus/pci/devices/<bdf>/resource; 0 when unknown.
uint64_t PciApertureBytes(std::string_view sysfs_root, std::string_view bdf);

// NvidiaGpuUuid: "gpu-..." (lower case) from the driver's information
// file for `bdf`, or "" when there is none (no driver, other vendor).
std::string NvidiaGpuUuid(std::string_view proc_root, std::string_view bdf);

// ListNvidiaGpus: the NVIDIA GPUs (vendor 0x10de, PCI class 0x03xxxx)
// under `sysfs_root`/bus/pci/devices, in PCI address order, indexed from 0
// in that order, with their UUIDs where the driver tells them.
std::vector<GpuIdentity> ListNvidiaGpus(std::string_view sysfs_root,
                                        std::string_view proc_root);

// PreferNumaNode asks the kernel to place the not yet touched pages of
// [addr, addr + len) on `node` (mbind(2) MPOL_PREFERRED: falls back to
// other nodes when that one is full, never fails an allocation). No
// libnuma: one system call is all it takes. node < 0 does nothing.
// Returns 0 or -errno (-ENOSYS on kernels without NUMA, -EINVAL).
int PreferNumaNode(void* addr, size_t len, int node);

}  // namespace fgds::gpu

#endif  // FGDS_COMMON_GPU_GPU_SYSFS_H_
