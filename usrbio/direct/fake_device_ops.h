// File: usrbio/direct/fake_device_ops.h
//
// FakeDeviceOps: DeviceOps over host memory, for unit tests of the engine
// on machines without a GPU. "Device allocations" are host blocks with
// buffer ids, copies are memcpy, and failures can be injected. The file
// side (real files, O_DIRECT, io_uring) stays real.
#ifndef FGDS_USRBIO_DIRECT_FAKE_DEVICE_OPS_H_
#define FGDS_USRBIO_DIRECT_FAKE_DEVICE_OPS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "usrbio/direct/device_ops.h"

namespace fgds::direct {

class FakeDeviceOps final : public DeviceOps {
 public:
  FakeDeviceOps() = default;
  ~FakeDeviceOps() override;

  // Alloc returns the "device address" of a new zeroed allocation; Free
  // releases it (later copies into it fail with -EFAULT, like a freed
  // cudaMalloc block).
  uint64_t Alloc(size_t bytes);
  // AllocOn: the same, as if on device `ordinal` (Resolve reports it;
  // Describe always says device 0), for tests of which device a buffer
  // lives on.
  uint64_t AllocOn(size_t bytes, int ordinal);
  void Free(uint64_t address);

  // The next `count` copies fail with `error` (a -errno).
  void FailCopies(int count, int error) {
    fail_error_.store(error);
    fail_count_.store(count);
  }
  // Each recorded event reports "not ready" to this many queries first, so
  // tests drive the engine's polling and blocking paths.
  void SetPendingQueries(int count) { pending_queries_.store(count); }
  // From now on Describe says the device exports dma-bufs (with PCI
  // address `pci_bus_id`), and ExportDmaBuf hands out a memfd standing in
  // for one: enough to drive a client through the export and the daemon's
  // refusal (a memfd is no dma-buf) without a GPU.
  void FakeDmaBufExport(std::string pci_bus_id) {
    std::lock_guard<std::mutex> lock(mu_);
    export_pci_bus_id_ = std::move(pci_bus_id);
  }
  int64_t exports() const { return exports_.load(); }
  int64_t copies() const { return copies_.load(); }
  int64_t active_pinned() const { return pinned_.load(); }

  int BindThread() override { return 0; }
  int AllocPinned(size_t bytes, void** out) override;
  void FreePinned(void* ptr, size_t bytes) override;
  int CreateStream(uintptr_t* stream) override;
  void DestroyStream(uintptr_t) override {}
  int SyncStream(uintptr_t) override { return 0; }
  int CreateEvent(uintptr_t* event) override;
  void DestroyEvent(uintptr_t event) override;
  int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                   uintptr_t stream) override;
  int CopyToHost(void* dst, uint64_t src, size_t bytes,
                 uintptr_t stream) override;
  int RecordEvent(uintptr_t event, uintptr_t stream) override;
  int QueryEvent(uintptr_t event) override;
  int WaitEvent(uintptr_t event) override;
  int Resolve(uint64_t address, AllocationInfo* info,
              std::string* message) override;
  int BufferId(uint64_t address, uint64_t* buffer_id) override;
  DeviceDescription Describe() override;
  int ExportDmaBuf(uint64_t address, uint64_t size, DmaBufExport* out,
                   std::string* message) override;

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size;
    uint64_t buffer_id;
    int device = 0;
  };
  // Finds the block holding [address, address + bytes); null if none.
  Block* FindLocked(uint64_t address, size_t bytes);
  int TakeInjectedFailure();

  std::mutex mu_;
  std::map<uint64_t, Block> blocks_;  // by address, guarded by mu_
  uint64_t next_buffer_id_ = 1;       // guarded by mu_
  std::map<uintptr_t, int> pending_;  // event -> queries left, under mu_
  uintptr_t next_handle_ = 1;         // guarded by mu_
  std::string export_pci_bus_id_;     // "": no export; guarded by mu_
  std::atomic<int64_t> exports_{0};
  std::atomic<int> fail_count_{0};
  std::atomic<int> fail_error_{0};
  std::atomic<int> pending_queries_{0};
  std::atomic<int64_t> copies_{0};
  std::atomic<int64_t> pinned_{0};
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_FAKE_DEVICE_OPS_H_
