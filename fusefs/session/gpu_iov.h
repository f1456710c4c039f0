// File: fusefs/session/gpu_iov.h
//
// The daemon's side of GPU iovs (FGDS_MSG_GPU_IOV_REGISTER): check that
// what the client sent is a dma-buf of GPU memory, then map it through the
// fgds kernel module of its GPU for the direct path, or say why not (the
// client then bounces). No CUDA here (DESIGN.md): the dma-buf fd and the
// module's device node are all it takes.
//
// Example (session.cc):
//   std::string exporter;
//   if (CheckGpuIovValues(msg, max) == 0 && DmaBufExporter(fd, &exporter) == 0)
//     GpuIovMapping m = MapGpuIov(msg, fd, options);  // m.memory if DIRECT
//
// Thread safety: the functions are; a mapping's memory is shared like any
// iov's (registry.h).
#ifndef FGDS_FUSEFS_SESSION_GPU_IOV_H_
#define FGDS_FUSEFS_SESSION_GPU_IOV_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/gpu/gpu_subset.h"
#include "common/kmod/node_access.h"
#include "fgds/usrbio.h"
#include "fgds/usrbio_wire.h"
#include "fusefs/session/registry.h"

namespace fgds::session {

// DmaBufExporter: 0 and the exporter's name (e.g. "nvidia") when `fd` is a
// dma-buf, else -EINVAL. The kernel lists an "exp_name:" line in
// /proc/self/fdinfo/<fd> for dma-bufs and for nothing else.
int DmaBufExporter(int fd, std::string* exporter);

// NicOnlyDescriptor: 0 when `fd` may be kept for a NIC to register
// (Session::RegisterNicOnlyGpuIov), with *exporter naming it; else
// -EINVAL. The NIC is the judge of what it can register (the kernel's
// dma_buf_get refuses anything else, and that refusal only makes the
// iov's entries bounce), so this does not insist on a dma-buf: it accepts
// one (exporter from fdinfo) or a file of tmpfs (a memfd, as the tests'
// stand-in GPUs hand over: "tmpfs"). It refuses the rest because the
// daemon holds the descriptor and closes it later, and a close of a file
// on another file system (FUSE, NFS) may wait on a server the client
// controls.
int NicOnlyDescriptor(int fd, std::string* exporter);

// CheckGpuIovValues: 0, or -EINVAL for a request no mapping could serve:
// size 0 or above `max_bytes`, a dma-buf size that is not whole pages, a
// range not inside the dma-buf, a pci_bus_id that is not a PCI address.
int CheckGpuIovValues(const fgds_msg_gpu_iov_register& msg, uint64_t max_bytes);

struct GpuIovOptions {
  // Where the module's nodes are (fgds_<bdf>); tests point it elsewhere.
  std::string device_dir = "/dev";
  // A file on the storage the iov's I/O will hit (the backing directory):
  // the module checks the peer-to-peer route to its block device. -1: none.
  int storage_fd = -1;
  // Whose iov it is (the session's peer, kmod::SocketPeerUser). The daemon
  // runs as root; it opens the node only for a user the node's mode lets
  // open it (the udev rule's group fgds), as that user could open it.
  kmod::NodeUser user;
  // The daemon's GPU subset (--gpus): memory of other GPUs is not mapped.
  gpu::GpuAllowList gpus;
};

// What MapGpuIov decided.
struct GpuIovMapping {
  uint32_t path = FGDS_PATH_BOUNCE;                 // or FGDS_PATH_DIRECT
  uint32_t reason = FGDS_IOV_GPU_REASON_NO_MODULE;  // NONE when direct
  std::string message;  // why not direct, in words; empty when direct
  // DIRECT: the GPU range as the daemon sees it, direct_only. It keeps the
  // module's registration (and the dma-buf) until the last reference goes.
  std::shared_ptr<SharedMemory> memory;
};

// MapGpuIov tries the direct path for a request CheckGpuIovValues passed:
// checks that the GPU is in options.gpus (else BOUNCE with EXCLUDED), that
// options.user may use the GPU's node (else BOUNCE with MODULE_ERROR, as that
// user's own open would fail), opens it, registers the pages of `dmabuf_fd`
// (not taken over: the registration holds its own reference) that cover the
// range, for storage_fd's device, and maps them. Never fails: whatever is
// missing makes it BOUNCE with a reason.
GpuIovMapping MapGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                        const GpuIovOptions& options);

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_GPU_IOV_H_
