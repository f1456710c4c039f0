// File: tools/probe/checks.h
//
// The groups of lines `fgds probe` prints, each reading the host through
// HostFs (and, for the fgds device, open(2) and ioctl(2)) and appending
// its checks to `out`. They never change the host.
#ifndef FGDS_TOOLS_PROBE_CHECKS_H_
#define FGDS_TOOLS_PROBE_CHECKS_H_

#include <functional>
#include <string>
#include <vector>

#include "include/uapi/fgds_ioctl.h"
#include "tools/probe/check.h"
#include "tools/probe/host_fs.h"
#include "tools/probe/pci_inventory.h"

namespace fgds::probe {

// The lowest kernel the direct path supports: dma-buf peer-to-peer
// import and NVIDIA's dma-buf export need 5.12 (NCCL's documented floor).
inline constexpr int kMinKernelMajor = 5;
inline constexpr int kMinKernelMinor = 12;

// Kernel release (/proc/sys/kernel/osrelease) and whether it can load
// modules (/proc/sys/kernel/modules_disabled).
void AddKernelChecks(const HostFs& fs, std::vector<Check>* out);

// Kernel config symbols, from /boot/config-<release> or /proc/config.gz.
void AddConfigChecks(const HostFs& fs, std::vector<Check>* out);

// IOMMU mode for the inventory's devices.
void AddIommuCheck(const HostFs& fs, const Inventory& inventory,
                   std::vector<Check>* out);

// nvidia module, dma-buf export, nvidia_drm. Returns whether the driver
// is loaded (with a GPU present, the bounce path can work).
bool AddNvidiaChecks(const HostFs& fs, const Inventory& inventory,
                     std::vector<Check>* out);

// One line per GPU (BAR1), per NVMe controller, and per GPU x NVMe pair
// (group "GPU-NVMe route").
void AddPciChecks(const Inventory& inventory, std::vector<Check>* out);

// QueryFn issues FGDS_IOCTL_QUERY on the open node `dev_fd` with `*q`
// (flags and storage_fd already set) and returns 0 or -errno. Tests pass
// a fake one: no fake tree can hold a node that answers the ioctl.
using QueryFn = std::function<int(int dev_fd, fgds_query* q)>;

// IoctlQuery is the real QueryFn: ioctl(2).
int IoctlQuery(int dev_fd, fgds_query* q);

// The fgds module, its /dev/fgds_* nodes, the user's access to them,
// FGDS_IOCTL_QUERY on each, and the module's own route verdict for each
// NVMe namespace (group "module route").
void AddFgdsChecks(const HostFs& fs, const Inventory& inventory,
                   const QueryFn& query, std::vector<Check>* out);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_CHECKS_H_
