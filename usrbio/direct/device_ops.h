// File: usrbio/direct/device_ops.h
//
// The engine's narrow interface to the GPU (STYLE.md 13): pinned staging
// memory, streams, events, copies and questions about device addresses.
// CudaDeviceOps implements it with the CUDA driver API; tests substitute
// host memory (fake_device_ops.h) to run the whole engine, real files and
// io_uring included, on machines without a GPU, and to inject failures.
//
// Errors are -errno. Streams and events are opaque handles.
#ifndef FGDS_USRBIO_DIRECT_DEVICE_OPS_H_
#define FGDS_USRBIO_DIRECT_DEVICE_OPS_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fgds::direct {

// The allocation a device address lies in.
struct AllocationInfo {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t buffer_id = 0;   // unique per allocation for the process
  int device_ordinal = -1;  // the device it lives on; -1: unknown
};

// What fgds_driver_query reports about the device.
struct DeviceDescription {
  int ordinal = -1;
  bool dmabuf_supported = false;
  std::string pci_bus_id;
  // The NUMA node the GPU hangs off (sysfs), where its staging goes; -1:
  // no NUMA, or unknown.
  int numa_node = -1;
};

// A dma-buf exported for a device range (ExportDmaBuf). The exported range
// is page aligned and covers the asked-for one, which starts `offset`
// bytes into it.
struct DmaBufExport {
  int fd = -1;  // the caller closes it
  uint64_t size = 0;
  uint64_t offset = 0;
};

// Thread safety: every method may be called from any thread at once.
// Stream and event methods are called by the worker owning the handle.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // BindThread prepares the calling thread for the calls below (makes the
  // driver's CUDA context current). Workers call it once at start.
  virtual int BindThread() = 0;

  // AllocPinned returns page-aligned host memory that both the device can
  // copy from/to at full speed and O_DIRECT can target (GUP-able pages).
  virtual int AllocPinned(size_t bytes, void** out) = 0;
  virtual void FreePinned(void* ptr, size_t bytes) = 0;

  virtual int CreateStream(uintptr_t* stream) = 0;
  virtual void DestroyStream(uintptr_t stream) = 0;
  virtual int SyncStream(uintptr_t stream) = 0;
  virtual int CreateEvent(uintptr_t* event) = 0;
  virtual void DestroyEvent(uintptr_t event) = 0;

  // Asynchronous copies on `stream`; the source/destination host memory is
  // in use until an event recorded after them completes.
  virtual int CopyToDevice(uint64_t dst, const void* src, size_t bytes,
                           uintptr_t stream) = 0;
  virtual int CopyToHost(void* dst, uint64_t src, size_t bytes,
                         uintptr_t stream) = 0;
  virtual int RecordEvent(uintptr_t event, uintptr_t stream) = 0;
  // QueryEvent: 0 when everything before the record has finished, -EAGAIN
  // while not, another -errno when the device failed.
  virtual int QueryEvent(uintptr_t event) = 0;
  virtual int WaitEvent(uintptr_t event) = 0;

  // Resolve fills `info` for a device address (-EFAULT and a message when
  // it is not device memory; -EXDEV with only info->device_ordinal set when
  // it is memory of another device that this one cannot describe).
  // Callable from any thread, bound or not.
  virtual int Resolve(uint64_t address, AllocationInfo* info,
                      std::string* message) = 0;
  // BufferId: the buffer id of the allocation holding `address` now, or
  // -EFAULT when none does (freed).
  virtual int BufferId(uint64_t address, uint64_t* buffer_id) = 0;

  virtual DeviceDescription Describe() = 0;

  // ExportDmaBuf exports device memory covering [address, address + size)
  // as a dma-buf, for the fgds kernel module (the direct path). -ENOTSUP
  // where the device cannot; -EFAULT/-EINVAL for a bad range.
  virtual int ExportDmaBuf(uint64_t address, uint64_t size, DmaBufExport* out,
                           std::string* message) {
    (void)address;
    (void)size;
    (void)out;
    *message = "this device cannot export its memory as a dma-buf";
    return -ENOTSUP;
  }
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_DEVICE_OPS_H_
