#include "usrbio/direct/direct_buffer.h"

#include <unistd.h>

namespace fgds::direct {

DirectBuffer::~DirectBuffer() {
  // The mappings go with by_device_ (the module keeps its own dma-buf
  // reference per registration); the exported fd is ours to close.
  if (export_.fd >= 0) close(export_.fd);
}

int DirectBuffer::ExportLocked(DeviceOps& ops, std::string* why) {
  if (export_error_ == 1) {
    exported_bytes_ = size_;
    export_error_ =
        ops.ExportDmaBuf(address_, exported_bytes_, &export_, &export_why_);
    // Only whole pages export: an allocation whose size is not a multiple
    // of the page (cudaMalloc(50000000)) goes direct up to its last whole
    // page, and I/O reaching past it bounces.
    AllocationInfo info;
    std::string ignored;
    if (export_error_ != 0 && ops.Resolve(address_, &info, &ignored) == 0) {
      const uint64_t page_end = (info.base + info.size) & ~uint64_t{4095};
      if (page_end > address_ && page_end < address_ + size_) {
        exported_bytes_ = page_end - address_;
        export_error_ =
            ops.ExportDmaBuf(address_, exported_bytes_, &export_, &export_why_);
      }
    }
  }
  if (export_error_ != 0) *why = export_why_;
  return export_error_;
}

int DirectBuffer::For(DeviceOps& ops,
                      const std::shared_ptr<kmod::KmodNode>& node, dev_t device,
                      int storage_fd, DirectTarget* out, std::string* why) {
  fgds::MutexLock lock(&mu_);
  auto [it, inserted] = by_device_.try_emplace(device);
  PerDevice& entry = it->second;
  if (inserted) {
    std::unique_ptr<kmod::KmodMapping> mapping;
    entry.error = ExportLocked(ops, &entry.why);
    if (entry.error == 0) {
      entry.error = kmod::KmodMapping::Create(node, export_.fd, 0, export_.size,
                                              storage_fd, &mapping, &entry.why);
    }
    if (entry.error == 0) entry.mapping = std::move(mapping);
  }
  if (entry.error != 0) {
    *why = entry.why;
    return entry.error;
  }
  out->mapping = entry.mapping;
  out->base = entry.mapping->data() + export_.offset;
  out->size = exported_bytes_;
  return 0;
}

}  // namespace fgds::direct
