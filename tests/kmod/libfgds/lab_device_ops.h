// File: tests/kmod/libfgds/lab_device_ops.h
//
// LabDeviceOps: direct::DeviceOps over the kmod lab's stand-in GPU, so that
// libfgds's direct path runs in the QEMU guest exactly as on a GPU host:
// the "device memory" is a window of the ivshmem BAR, exported as dma-bufs
// by fgds_test_exporter.ko (bus addresses, no struct pages, like NVIDIA's
// exporter), and libfgds registers and maps them through the real fgds
// module. Only the GPU driver is replaced: the copies of the bounce path
// are CPU copies through an fgds mapping of the window (the "GPU" has no
// DMA engine of its own).
//
// Device addresses are kDeviceBase + (offset inside the window). The
// window is one allocation; Free() gives it a new buffer id, as cuMemFree
// and a new cuMemAlloc would.
#ifndef FGDS_TESTS_KMOD_LIBFGDS_LAB_DEVICE_OPS_H_
#define FGDS_TESTS_KMOD_LIBFGDS_LAB_DEVICE_OPS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/kmod/kmod_buffer.h"
#include "usrbio/direct/device_ops.h"

namespace fgds::lab {

inline constexpr uint64_t kDeviceBase = uint64_t{0x7a0000000000};

class LabDeviceOps final : public direct::DeviceOps {
 public:
  // Open: the exporter (/dev/fgds_test_exporter), the BAR window
  // [bar_offset, bar_offset + size), and a CPU view of it through
  // `fgds_node` registered for storage_fd's device.
  static int Open(const std::string& fgds_node, uint64_t bar_offset,
                  uint64_t size, int storage_fd,
                  std::unique_ptr<LabDeviceOps>* out, std::string* message);
  ~LabDeviceOps() override;

  // The CPU's view of the window (for filling and checking).
  uint8_t* view() const { return view_->data(); }
  uint64_t size() const { return size_; }
  const std::string& pci_name() const { return pci_name_; }
  // Free ends the current "allocation": later I/O on it fails -EFAULT.
  void Free() { buffer_id_.fetch_add(1); }
  // SetAllocationBytes makes the allocation end at `bytes` (at most the
  // window), as cudaMalloc of a size that is not whole pages does: its
  // last partial page cannot be exported, as with CUDA.
  void SetAllocationBytes(uint64_t bytes) { allocation_bytes_.store(bytes); }
  int exports() const { return exports_.load(); }

  int BindThread() override { return 0; }
  int AllocPinned(size_t bytes, void** out) override;
  void FreePinned(void* ptr, size_t bytes) override;
  int CreateStream(uintptr_t* stream) override;
  void DestroyStream(uintptr_t) override {}
  int SyncStream(uintptr_t) override { return 0; }
  int CreateEvent(uintptr_t* event) override;
  void DestroyEvent(uintptr_t) override {}
  int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                   uintptr_t stream) override;
  int CopyToHost(void* dst, uint64_t src, size_t bytes,
                 uintptr_t stream) override;
  int RecordEvent(uintptr_t, uintptr_t) override { return 0; }
  int QueryEvent(uintptr_t) override { return 0; }
  int WaitEvent(uintptr_t) override { return 0; }
  int Resolve(uint64_t address, direct::AllocationInfo* info,
              std::string* message) override;
  int BufferId(uint64_t address, uint64_t* buffer_id) override;
  direct::DeviceDescription Describe() override;
  int ExportDmaBuf(uint64_t address, uint64_t size, direct::DmaBufExport* out,
                   std::string* message) override;

 private:
  LabDeviceOps() = default;
  // Inside: [address, address + bytes) lies in the window.
  bool Inside(uint64_t address, uint64_t bytes) const;

  int exporter_fd_ = -1;
  std::string pci_name_;
  uint64_t bar_offset_ = 0;
  uint64_t size_ = 0;
  std::unique_ptr<kmod::KmodMapping> view_;
  std::atomic<uint64_t> buffer_id_{1};
  std::atomic<uint64_t> allocation_bytes_{0};  // 0: the whole window
  std::atomic<int> exports_{0};
};

}  // namespace fgds::lab

#endif  // FGDS_TESTS_KMOD_LIBFGDS_LAB_DEVICE_OPS_H_
