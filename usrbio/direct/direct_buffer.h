// File: usrbio/direct/direct_buffer.h
//
// DirectBuffer: the direct path's state for one registered buffer. Its
// dma-buf is exported on first use, and each storage device gets its own
// fgds registration and mapping (the module checks the P2P route per
// device) when the first I/O with a file on it comes. A device the module
// refuses is remembered, and I/O with it bounces.
//
// Thread safety: For may be called from many threads at once.
#ifndef FGDS_USRBIO_DIRECT_DIRECT_BUFFER_H_
#define FGDS_USRBIO_DIRECT_DIRECT_BUFFER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "common/kmod/kmod_buffer.h"
#include "common/mutex.h"
#include "usrbio/direct/device_ops.h"

namespace fgds::direct {

// Where the direct path moves a buffer's bytes for one storage device.
struct DirectTarget {
  std::shared_ptr<kmod::KmodMapping> mapping;  // keeps the mapping alive
  uint8_t* base = nullptr;  // the buffer's first byte, in the mapping
  // Bytes of the buffer from `base` that are mapped: all of it, or up to
  // the allocation's last whole page (only whole pages export).
  uint64_t size = 0;
};

class DirectBuffer {
 public:
  DirectBuffer(uint64_t address, uint64_t size)
      : address_(address), size_(size) {}
  ~DirectBuffer();
  DirectBuffer(const DirectBuffer&) = delete;
  DirectBuffer& operator=(const DirectBuffer&) = delete;

  // For returns the target for I/O between this buffer and files on
  // block device `device`, of which storage_fd is one (the module checks
  // the route through it): 0 and `out`, or -errno (this device, or this
  // buffer, cannot go direct) with `why`. Failures are remembered.
  int For(DeviceOps& ops, const std::shared_ptr<kmod::KmodNode>& node,
          dev_t device, int storage_fd, DirectTarget* out, std::string* why);

 private:
  struct PerDevice {
    std::shared_ptr<kmod::KmodMapping> mapping;
    int error = 0;
    std::string why;
  };

  // Export makes the dma-buf once; 0 or the remembered failure.
  int ExportLocked(DeviceOps& ops, std::string* why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t address_;
  const uint64_t size_;
  fgds::Mutex mu_;
  DmaBufExport export_ ABSL_GUARDED_BY(mu_);
  int export_error_ ABSL_GUARDED_BY(mu_) = 1;         // 1: not tried yet
  uint64_t exported_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // from address_
  std::string export_why_ ABSL_GUARDED_BY(mu_);
  std::map<dev_t, PerDevice> by_device_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_DIRECT_BUFFER_H_
