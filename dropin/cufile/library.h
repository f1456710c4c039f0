// File: dropin/cufile/library.h
//
// Library: the cuFile drop-in's process-wide state. cuFile is a
// process-global API (no context argument), so this is one object:
//
//   driver     the open count (cuFileDriverOpen/Close; the first handle or
//              buffer registration opens it implicitly, as NVIDIA's does)
//              and the driver properties the Set* calls change;
//   devices    one libfgds driver per CUDA device, opened on the device's
//              primary context when the first buffer or I/O needs it;
//   handles    registered files (CUfileHandle_t is a FileHandle*), looked
//              up in a table so that a stale or forged handle is an error,
//              not a crash;
//   buffers    registered ranges (device: fgds_buf_register on the device's
//              driver; host: recorded only).
//
// Thread safety: every method may be called from any thread; the tables
// are guarded by mu_, I/O runs outside it on shared_ptr copies.
#ifndef FGDS_DROPIN_CUFILE_LIBRARY_H_
#define FGDS_DROPIN_CUFILE_LIBRARY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dropin/cufile/include/cufile.h"
#include "fgds/fgds.h"

namespace fgds::cufile {

// A registered file. The descriptor stays the caller's.
struct FileHandle {
  int fd = -1;
  // Drivers that hold engine twins of fd (fgds_file_register), so that each
  // I/O need not reopen them; deregistered with the handle.
  std::mutex mu;
  std::vector<fgds_driver*> registered_with;
};

// Where one I/O's buffer is: host memory (plain pread/pwrite) or device
// memory served by a libfgds driver.
struct Target {
  fgds_driver* driver = nullptr;  // null for host memory
};

class Library {
 public:
  static Library& Get();

  CUfileError_t Open();
  CUfileError_t Close();
  long UseCount();
  // OpenImplicitly opens the driver unless it is open (registration calls).
  CUfileError_t OpenImplicitly();

  CUfileError_t GetProperties(CUfileDrvProps_t* props);
  // The Set* calls: recorded and reported by GetProperties. -EINVAL via
  // CU_FILE_INVALID_VALUE for out-of-range values, DRIVER_NOT_INITIALIZED
  // before an open.
  CUfileError_t SetPollMode(bool poll, size_t threshold_kb);
  CUfileError_t SetMaxDirectIoSize(size_t kb);
  CUfileError_t SetMaxCacheSize(size_t kb);
  CUfileError_t SetMaxPinnedMemSize(size_t kb);

  CUfileError_t RegisterHandle(CUfileHandle_t* fh, const CUfileDescr_t* descr);
  void DeregisterHandle(CUfileHandle_t fh);
  // FindHandle returns the live handle `fh` names, or null.
  std::shared_ptr<FileHandle> FindHandle(CUfileHandle_t fh);

  CUfileError_t RegisterBuffer(const void* base, size_t length, int flags);
  CUfileError_t DeregisterBuffer(const void* base);

  // Resolve finds where the I/O of `size` bytes at `base + offset` goes
  // and, for device memory, the driver of its device (opened on first use)
  // with `handle`'s file registered on it. When `base` is a registered
  // buffer the range must lie inside it (-EINVAL). Returns 0 or -errno with
  // `cu_result` set for CUDA failures.
  int Resolve(const void* base, uint64_t offset, uint64_t size,
              FileHandle& handle, Target* target, int* cu_result);

 private:
  Library() = default;
  // DriverFor returns device `device`'s driver, opening it on first use.
  // REQUIRES: mu_ held.
  int DriverForLocked(int device, fgds_driver** driver, std::string* message);
  // Drops every handle, buffer and driver (the last close).
  // REQUIRES: mu_ held.
  void ResetLocked();

  struct Buffer {
    size_t length = 0;
    fgds_driver* driver = nullptr;  // null: host memory, only recorded
  };

  std::mutex mu_;
  long open_count_ = 0;
  CUfileDrvProps_t props_ = {};
  std::map<int, fgds_driver*> drivers_;  // device ordinal -> driver
  std::map<const void*, std::shared_ptr<FileHandle>> handles_;
  std::map<const void*, Buffer> buffers_;  // registered base -> buffer
};

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_LIBRARY_H_
