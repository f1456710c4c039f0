// GpuBackend on fake device memory (usrbio/direct/fake_device_ops.h), for
// libcufile_fakegpu.so: the whole cuFile drop-in, libfgds's engine and
// real files included, runs on machines without a GPU. One fake device
// (ordinal 0) whose allocations come from fgds_fake_gpu_alloc.
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "dropin/cufile/gpu_backend.h"
#include "dropin/cufile/tests/fake_gpu.h"
#include "usrbio/direct/c_api_internal.h"
#include "usrbio/direct/driver.h"
#include "usrbio/direct/fake_device_ops.h"
#include "usrbio/direct/options.h"

namespace fgds::cufile {
namespace {

using direct::AllocationInfo;
using direct::DeviceDescription;
using direct::DeviceOps;
using direct::DmaBufExport;
using direct::FakeDeviceOps;

// The one fake device's memory, shared by every driver the library opens.
FakeDeviceOps& Device() {
  static FakeDeviceOps* device = new FakeDeviceOps();  // never destroyed
  return *device;
}

// A Driver owns its DeviceOps; this one lends it the shared fake device.
class SharedFakeDeviceOps final : public DeviceOps {
 public:
  int BindThread() override { return Device().BindThread(); }
  int AllocPinned(size_t bytes, void** out) override {
    return Device().AllocPinned(bytes, out);
  }
  void FreePinned(void* ptr, size_t bytes) override {
    Device().FreePinned(ptr, bytes);
  }
  int CreateStream(uintptr_t* stream) override {
    return Device().CreateStream(stream);
  }
  void DestroyStream(uintptr_t stream) override {
    Device().DestroyStream(stream);
  }
  int SyncStream(uintptr_t stream) override {
    return Device().SyncStream(stream);
  }
  int CreateEvent(uintptr_t* event) override {
    return Device().CreateEvent(event);
  }
  void DestroyEvent(uintptr_t event) override { Device().DestroyEvent(event); }
  int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                   uintptr_t stream) override {
    return Device().CopyToDevice(dst, src, bytes, stream);
  }
  int CopyToHost(void* dst, uint64_t src, size_t bytes,
                 uintptr_t stream) override {
    return Device().CopyToHost(dst, src, bytes, stream);
  }
  int RecordEvent(uintptr_t event, uintptr_t stream) override {
    return Device().RecordEvent(event, stream);
  }
  int QueryEvent(uintptr_t event) override {
    return Device().QueryEvent(event);
  }
  int WaitEvent(uintptr_t event) override { return Device().WaitEvent(event); }
  int Resolve(uint64_t address, AllocationInfo* info,
              std::string* message) override {
    return Device().Resolve(address, info, message);
  }
  int BufferId(uint64_t address, uint64_t* buffer_id) override {
    return Device().BufferId(address, buffer_id);
  }
  DeviceDescription Describe() override { return Device().Describe(); }
  int ExportDmaBuf(uint64_t address, uint64_t size, DmaBufExport* out,
                   std::string* message) override {
    return Device().ExportDmaBuf(address, size, out, message);
  }
};

class FakeBackend final : public GpuBackend {
 public:
  int Probe(int*, std::string*) override { return 0; }

  int DeviceOf(uint64_t address, int* device) override {
    AllocationInfo info;
    std::string message;
    if (Device().Resolve(address, &info, &message) != 0) return -EFAULT;
    *device = 0;
    return 0;
  }

  int OpenDriver(int device, fgds_driver** driver,
                 std::string* message) override {
    if (device != 0) return -ENODEV;
    direct::DriverConfig config;
    if (int error = direct::ResolveDriverParams(nullptr, 2, &config, message);
        error != 0) {
      return error;
    }
    std::unique_ptr<direct::Driver> impl;
    if (int error = direct::Driver::Open(
            config, std::make_unique<SharedFakeDeviceOps>(), &impl, message);
        error != 0) {
      return error;
    }
    *driver = direct::WrapDriverForTesting(std::move(impl));
    return 0;
  }

  int SynchronizeStream(void*, int*) override { return 0; }
};

}  // namespace

GpuBackend& Backend() {
  static FakeBackend* backend = new FakeBackend();  // never destroyed
  return *backend;
}

}  // namespace fgds::cufile

extern "C" {

void* fgds_fake_gpu_alloc(size_t bytes) {
  return reinterpret_cast<void*>(fgds::cufile::Device().Alloc(bytes));
}

void fgds_fake_gpu_free(void* ptr) {
  fgds::cufile::Device().Free(reinterpret_cast<uint64_t>(ptr));
}

}  // extern "C"
