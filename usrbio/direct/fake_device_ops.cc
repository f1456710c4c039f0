#include "usrbio/direct/fake_device_ops.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fgds::direct {

FakeDeviceOps::~FakeDeviceOps() = default;

uint64_t FakeDeviceOps::Alloc(size_t bytes) { return AllocOn(bytes, 0); }

uint64_t FakeDeviceOps::AllocOn(size_t bytes, int ordinal) {
  std::lock_guard<std::mutex> lock(mu_);
  Block block;
  block.device = ordinal;
  block.bytes = std::make_unique<uint8_t[]>(bytes);
  block.size = bytes;
  block.buffer_id = next_buffer_id_++;
  const uint64_t address = reinterpret_cast<uint64_t>(block.bytes.get());
  blocks_[address] = std::move(block);
  return address;
}

void FakeDeviceOps::Free(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.erase(address);
}

FakeDeviceOps::Block* FakeDeviceOps::FindLocked(uint64_t address,
                                                size_t bytes) {
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return nullptr;
  --it;
  const uint64_t offset = address - it->first;
  if (offset > it->second.size || bytes > it->second.size - offset) {
    return nullptr;
  }
  return &it->second;
}

int FakeDeviceOps::TakeInjectedFailure() {
  int left = fail_count_.load();
  while (left > 0) {
    if (fail_count_.compare_exchange_weak(left, left - 1)) {
      return fail_error_.load();
    }
  }
  return 0;
}

int FakeDeviceOps::AllocPinned(size_t bytes, void** out) {
  *out = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (*out == nullptr) return -ENOMEM;
  pinned_.fetch_add(1);
  return 0;
}

void FakeDeviceOps::FreePinned(void* ptr, size_t) {
  std::free(ptr);
  pinned_.fetch_sub(1);
}

int FakeDeviceOps::CreateStream(uintptr_t* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  *stream = next_handle_++;
  return 0;
}

int FakeDeviceOps::CreateEvent(uintptr_t* event) {
  std::lock_guard<std::mutex> lock(mu_);
  *event = next_handle_++;
  pending_[*event] = 0;
  return 0;
}

void FakeDeviceOps::DestroyEvent(uintptr_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(event);
}

// Copies run at once (a device that is infinitely fast); the block stays
// locked while copying so that a concurrent Free cannot pull it away, as
// cuMemFree waits for queued copies.
int FakeDeviceOps::CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                                uintptr_t) {
  if (int error = TakeInjectedFailure(); error != 0) return error;
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(dst, bytes) == nullptr) return -EINVAL;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  copies_.fetch_add(1);
  return 0;
}

int FakeDeviceOps::CopyToHost(void* dst, uint64_t src, size_t bytes,
                              uintptr_t) {
  if (int error = TakeInjectedFailure(); error != 0) return error;
  std::lock_guard<std::mutex> lock(mu_);
  if (FindLocked(src, bytes) == nullptr) return -EINVAL;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  copies_.fetch_add(1);
  return 0;
}

int FakeDeviceOps::RecordEvent(uintptr_t event, uintptr_t) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_[event] = pending_queries_.load();
  return 0;
}

int FakeDeviceOps::QueryEvent(uintptr_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  int& left = pending_[event];
  if (left > 0) {
    --left;
    return -EAGAIN;
  }
  return 0;
}

int FakeDeviceOps::WaitEvent(uintptr_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_[event] = 0;
  return 0;
}

int FakeDeviceOps::Resolve(uint64_t address, AllocationInfo* info,
                           std::string* message) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.upper_bound(address);
  if (it != blocks_.begin()) {
    --it;
    if (address - it->first < it->second.size) {
      info->base = it->first;
      info->size = it->second.size;
      info->buffer_id = it->second.buffer_id;
      info->device_ordinal = it->second.device;
      return 0;
    }
  }
  *message = "not fake device memory";
  return -EFAULT;
}

int FakeDeviceOps::BufferId(uint64_t address, uint64_t* buffer_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const Block* block = FindLocked(address, 1);
  if (block == nullptr) return -EFAULT;
  *buffer_id = block->buffer_id;
  return 0;
}

DeviceDescription FakeDeviceOps::Describe() {
  DeviceDescription description;
  description.ordinal = 0;
  std::lock_guard<std::mutex> lock(mu_);
  description.dmabuf_supported = !export_pci_bus_id_.empty();
  description.pci_bus_id =
      export_pci_bus_id_.empty() ? "0000:00:00.0" : export_pci_bus_id_;
  return description;
}

int FakeDeviceOps::ExportDmaBuf(uint64_t address, uint64_t size,
                                DmaBufExport* out, std::string* message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (export_pci_bus_id_.empty()) {
      return DeviceOps::ExportDmaBuf(address, size, out, message);
    }
    if (FindLocked(address, size) == nullptr) {
      *message = "not fake device memory";
      return -EFAULT;
    }
  }
  // Page-aligned around the range, like the driver's export.
  constexpr uint64_t kPage = 4096;
  const uint64_t first = address & ~(kPage - 1);
  const uint64_t end = (address + size + kPage - 1) & ~(kPage - 1);
  const int fd = memfd_create("fgds-fake-dmabuf", MFD_CLOEXEC);
  if (fd < 0) return -errno;
  if (ftruncate(fd, static_cast<off_t>(end - first)) != 0) {
    const int error = errno;
    close(fd);
    return -error;
  }
  out->fd = fd;
  out->size = end - first;
  out->offset = address - first;
  ++exports_;
  return 0;
}

}  // namespace fgds::direct
