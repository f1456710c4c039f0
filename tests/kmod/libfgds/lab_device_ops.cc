#include "tests/kmod/libfgds/lab_device_ops.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "fgds_test_exporter.h"

namespace fgds::lab {

int LabDeviceOps::Open(const std::string& fgds_node, uint64_t bar_offset,
                       uint64_t size, int storage_fd,
                       std::unique_ptr<LabDeviceOps>* out,
                       std::string* message) {
  std::unique_ptr<LabDeviceOps> ops(new LabDeviceOps());
  ops->exporter_fd_ = open("/dev/fgds_test_exporter", O_RDWR | O_CLOEXEC);
  if (ops->exporter_fd_ < 0) {
    *message =
        std::string("open /dev/fgds_test_exporter: ") + std::strerror(errno);
    return -errno;
  }
  texp_info info = {};
  if (ioctl(ops->exporter_fd_, TEXP_IOCTL_INFO, &info) != 0) {
    *message = std::string("TEXP_IOCTL_INFO: ") + std::strerror(errno);
    return -errno;
  }
  if (bar_offset % 4096 != 0 || size % 4096 != 0 || size == 0 ||
      bar_offset + size > info.bar_size) {
    *message = "the window does not fit the BAR";
    return -EINVAL;
  }
  ops->pci_name_ = info.pci_name;
  ops->bar_offset_ = bar_offset;
  ops->size_ = size;
  // The CPU view: a dma-buf of the window, mapped through fgds.
  texp_export exp = {};
  exp.offset = bar_offset;
  exp.size = size;
  if (ioctl(ops->exporter_fd_, TEXP_IOCTL_EXPORT, &exp) != 0) {
    *message = std::string("TEXP_IOCTL_EXPORT (view): ") + std::strerror(errno);
    return -errno;
  }
  std::shared_ptr<kmod::KmodNode> node;
  int error = kmod::KmodNode::Open(fgds_node, &node, message);
  if (error == 0) {
    error = kmod::KmodMapping::Create(node, exp.fd, 0, size, storage_fd,
                                      &ops->view_, message);
  }
  close(exp.fd);
  if (error != 0) return error;
  *out = std::move(ops);
  return 0;
}

LabDeviceOps::~LabDeviceOps() {
  view_.reset();
  if (exporter_fd_ >= 0) close(exporter_fd_);
}

bool LabDeviceOps::Inside(uint64_t address, uint64_t bytes) const {
  return address >= kDeviceBase && address - kDeviceBase <= size_ &&
         bytes <= size_ - (address - kDeviceBase);
}

int LabDeviceOps::AllocPinned(size_t bytes, void** out) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (p == nullptr) return -ENOMEM;
  *out = p;
  return 0;
}

void LabDeviceOps::FreePinned(void* ptr, size_t) { std::free(ptr); }

int LabDeviceOps::CreateStream(uintptr_t* stream) {
  *stream = 1;
  return 0;
}

int LabDeviceOps::CreateEvent(uintptr_t* event) {
  *event = 1;
  return 0;
}

int LabDeviceOps::CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                               uintptr_t) {
  if (!Inside(dst, bytes)) return -EINVAL;
  std::memcpy(view() + (dst - kDeviceBase), src, bytes);
  return 0;
}

int LabDeviceOps::CopyToHost(void* dst, uint64_t src, size_t bytes, uintptr_t) {
  if (!Inside(src, bytes)) return -EINVAL;
  std::memcpy(dst, view() + (src - kDeviceBase), bytes);
  return 0;
}

int LabDeviceOps::Resolve(uint64_t address, direct::AllocationInfo* info,
                          std::string* message) {
  if (!Inside(address, 1)) {
    *message = "not an address of the lab's device window";
    return -EFAULT;
  }
  info->base = kDeviceBase;
  info->size = allocation_bytes_.load() != 0 ? allocation_bytes_.load() : size_;
  info->buffer_id = buffer_id_.load();
  return 0;
}

int LabDeviceOps::BufferId(uint64_t address, uint64_t* buffer_id) {
  if (!Inside(address, 1)) return -EFAULT;
  *buffer_id = buffer_id_.load();
  return 0;
}

direct::DeviceDescription LabDeviceOps::Describe() {
  direct::DeviceDescription description;
  description.ordinal = 0;
  description.dmabuf_supported = true;
  description.pci_bus_id = pci_name_;
  return description;
}

int LabDeviceOps::ExportDmaBuf(uint64_t address, uint64_t size,
                               direct::DmaBufExport* out,
                               std::string* message) {
  if (size == 0 || !Inside(address, size)) {
    *message = "export: the range leaves the lab's device window";
    return -EINVAL;
  }
  // Page-aligned cover, 64 KiB segments: GPU memory comes in 64 KiB pages.
  const uint64_t start = (address - kDeviceBase) & ~uint64_t{4095};
  const uint64_t end = (address - kDeviceBase + size + 4095) & ~uint64_t{4095};
  const uint64_t allocation = allocation_bytes_.load();
  if (allocation != 0 && end > allocation) {
    // As cuMemGetHandleForAddressRange: the page-aligned range must lie
    // inside the allocation.
    *message = "export: the range's last page runs past the allocation";
    return -EINVAL;
  }
  texp_export exp = {};
  exp.offset = bar_offset_ + start;
  exp.size = end - start;
  exp.segment_size = 64 * 1024;
  if (ioctl(exporter_fd_, TEXP_IOCTL_EXPORT, &exp) != 0) {
    *message = std::string("TEXP_IOCTL_EXPORT: ") + std::strerror(errno);
    return -errno;
  }
  exports_.fetch_add(1);
  out->fd = exp.fd;
  out->size = end - start;
  out->offset = (address - kDeviceBase) - start;
  return 0;
}

}  // namespace fgds::lab
