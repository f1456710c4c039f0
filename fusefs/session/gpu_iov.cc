#include "fusefs/session/gpu_iov.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "common/kmod/device_node.h"
#include "common/kmod/kmod_buffer.h"
#include "common/kmod/node_access.h"
#include "common/kmod/storage_device.h"

namespace fgds::session {
namespace {

// The module maps whole pages (include/uapi/fgds_ioctl.h).
constexpr uint64_t kPage = 4096;

uint64_t RoundDown(uint64_t v) { return v & ~(kPage - 1); }
uint64_t RoundUp(uint64_t v) { return RoundDown(v + kPage - 1); }

GpuIovMapping Bounce(uint32_t reason, std::string message) {
  GpuIovMapping m;
  m.path = FGDS_PATH_BOUNCE;
  m.reason = reason;
  m.message = std::move(message);
  return m;
}

// The reason for a route or registration errno of the module.
uint32_t ReasonOf(int error) {
  return error == -ENOTBLK || error == -EREMOTEIO
             ? FGDS_IOV_GPU_REASON_NO_P2P
             : FGDS_IOV_GPU_REASON_MAP_FAILED;
}

}  // namespace

int DmaBufExporter(int fd, std::string* exporter) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return -EINVAL;
  // fdinfo of a dma-buf: pos, flags, mnt_id, ino, size, count, exp_name,
  // name; a few short lines, so a line buffer this size holds each.
  char line[256];
  int ret = -EINVAL;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string_view text(line);
    constexpr std::string_view kKey = "exp_name:";
    if (text.substr(0, kKey.size()) != kKey) continue;
    text.remove_prefix(kKey.size());
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
      text.remove_suffix(1);
    }
    exporter->assign(text);
    ret = 0;
    break;
  }
  std::fclose(f);
  return ret;
}

int NicOnlyDescriptor(int fd, std::string* exporter) {
  if (DmaBufExporter(fd, exporter) == 0) return 0;
  struct statfs sfs;
  struct stat st;
  if (fstatfs(fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    *exporter = "tmpfs";
    return 0;
  }
  return -EINVAL;
}

int CheckGpuIovValues(const fgds_msg_gpu_iov_register& msg,
                      uint64_t max_bytes) {
  if (msg.size == 0 || msg.size > max_bytes) return -EINVAL;
  // Overflow-safe "[dmabuf_offset, + size) inside whole pages of dma-buf".
  if (msg.dmabuf_size % kPage != 0 || msg.dmabuf_offset > msg.dmabuf_size ||
      msg.size > msg.dmabuf_size - msg.dmabuf_offset) {
    return -EINVAL;
  }
  // wire_parse guarantees the NUL inside the field.
  if (kmod::FgdsDeviceNode(msg.pci_bus_id).empty()) return -EINVAL;
  return 0;
}

GpuIovMapping MapGpuIov(const fgds_msg_gpu_iov_register& msg, int dmabuf_fd,
                        const GpuIovOptions& options) {
  if (!options.gpus.Allows(msg.pci_bus_id)) {
    return Bounce(FGDS_IOV_GPU_REASON_EXCLUDED,
                  std::string("GPU ") + msg.pci_bus_id +
                      " is not in the daemon's GPU subset (--gpus " +
                      options.gpus.spec + ")");
  }
  // FgdsDeviceNode names it under /dev; keep the name, take the directory.
  std::string node_path = kmod::FgdsDeviceNode(msg.pci_bus_id);
  node_path = options.device_dir + node_path.substr(node_path.rfind('/'));
  std::shared_ptr<kmod::KmodNode> node;
  std::string message;
  int ret = kmod::CheckNodeAccess(node_path, options.user, &message);
  if (ret == 0) ret = kmod::KmodNode::Open(node_path, &node, &message);
  if (ret == -ENOENT) {
    return Bounce(FGDS_IOV_GPU_REASON_NO_MODULE, std::move(message));
  }
  if (ret != 0) {
    return Bounce(FGDS_IOV_GPU_REASON_MODULE_ERROR, std::move(message));
  }
  if (options.storage_fd < 0) {
    return Bounce(FGDS_IOV_GPU_REASON_NO_P2P,
                  "the daemon has no storage device to route to");
  }
  // Asked first so the answer names the route, not a failed registration.
  ret = node->Route(options.storage_fd, &message);
  if (ret != 0) return Bounce(ReasonOf(ret), node_path + ": " + message);
  // Whole pages around the range; the iov starts inside the first one.
  const uint64_t first = RoundDown(msg.dmabuf_offset);
  const uint64_t end = RoundUp(msg.dmabuf_offset + msg.size);
  std::unique_ptr<kmod::KmodMapping> mapping;
  ret = kmod::KmodMapping::Create(node, dmabuf_fd, first, end - first,
                                  options.storage_fd, &mapping, &message);
  if (ret != 0) return Bounce(ReasonOf(ret), std::move(message));
  char* base =
      reinterpret_cast<char*>(mapping->data()) + (msg.dmabuf_offset - first);
  GpuIovMapping m;
  m.path = FGDS_PATH_DIRECT;
  m.reason = FGDS_IOV_GPU_REASON_NONE;
  m.memory = SharedMemory::Adopt(
      base, msg.size, std::shared_ptr<kmod::KmodMapping>(std::move(mapping)),
      kmod::StorageDevice(options.storage_fd));
  return m;
}

}  // namespace fgds::session
