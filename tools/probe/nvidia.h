// File: tools/probe/nvidia.h
//
// The NVIDIA kernel driver as the direct path needs it: loaded, and able
// to export GPU memory as a dma-buf (cuMemGetHandleForAddressRange with
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD).
//
// Assumption, stated in every hint that depends on it: dma-buf export
// comes from NVIDIA's open kernel modules (kernel-open/nvidia/
// nv-dmabuf.c), release 515 or newer, as NCCL and libfabric document; the
// proprietary module is treated as not exporting.
#ifndef FGDS_TOOLS_PROBE_NVIDIA_H_
#define FGDS_TOOLS_PROBE_NVIDIA_H_

#include <string>

#include "absl/strings/string_view.h"
#include "tools/probe/check.h"

namespace fgds::probe {

inline constexpr int kMinDmaBufDriverMajor = 515;

enum class NvidiaFlavor { kOpen, kProprietary, kUnknown };

struct NvidiaDriver {
  bool loaded = false;  // /sys/module/nvidia exists
  std::string version;  // /sys/module/nvidia/version: "550.54.14"
  NvidiaFlavor flavor = NvidiaFlavor::kUnknown;
  bool drm_loaded = false;  // /sys/module/nvidia_drm exists
};

// FlavorFromProcVersion reads /proc/driver/nvidia/version: its first line
// says "NVIDIA UNIX Open Kernel Module for x86_64" for the open module and
// "NVIDIA UNIX x86_64 Kernel Module" for the proprietary one.
NvidiaFlavor FlavorFromProcVersion(absl::string_view text);

// FlavorFromTaint reads /sys/module/nvidia/taint: "P" (proprietary
// license) marks the closed module; the open one is dual MIT/GPL.
NvidiaFlavor FlavorFromTaint(absl::string_view taint);

// DriverMajor returns 550 for "550.54.14", -1 when it cannot tell.
int DriverMajor(absl::string_view version);

// NvidiaModuleCheck: loaded (ok) or not (FAIL, when a GPU exists).
Check NvidiaModuleCheck(const NvidiaDriver& driver, bool have_gpu);

// DmaBufCheck: whether this driver can export GPU memory as a dma-buf.
Check DmaBufCheck(const NvidiaDriver& driver);

// NvidiaDrmCheck: nvidia_drm loaded is a warn (it may map the BAR
// write-combined first, and x86 PAT then refuses fgds's mapping:
// "conflicting memory types", nicexlab/phoenix issue #4).
Check NvidiaDrmCheck(const NvidiaDriver& driver);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_NVIDIA_H_
