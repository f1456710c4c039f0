#include "usrbio/direct/direct_buffer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fgds::direct {

DirectBuffer::~DirectBuffer() {
  // The mappings go with by_device_ (the module keeps its own dma-buf
  // reference per registration); the exported fd is ours to close.
  if (export_.fd >= 0) close(export_.fd);
}

int DirectBuffer::ExportLocked(DeviceOps& ops, std::string* why) {
  if (export_error_ == 1) {
    export_error_ = ops.ExportDmaBuf(address_, size_, &export_, &export_why_);
  }
  if (export_error_ != 0) *why = export_why_;
  return export_error_;
}

int DirectBuffer::For(DeviceOps& ops, const std::shared_ptr<KmodNode>& node,
                      int storage_fd, DirectTarget* out, std::string* why) {
  struct stat st;
  if (fstat(storage_fd, &st) != 0) {
    *why = std::string("fstat of the file failed: ") + std::strerror(errno);
    return -errno;
  }
  // A block device node is its own storage; a file lives on st_dev.
  const dev_t device = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  fgds::MutexLock lock(&mu_);
  auto [it, inserted] = by_device_.try_emplace(device);
  PerDevice& entry = it->second;
  if (inserted) {
    std::unique_ptr<KmodMapping> mapping;
    entry.error = ExportLocked(ops, &entry.why);
    if (entry.error == 0) {
      entry.error = KmodMapping::Create(node, export_.fd, 0, export_.size,
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
  return 0;
}

}  // namespace fgds::direct
