#include "dropin/cufile/library.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

#include "dropin/cufile/error_map.h"
#include "dropin/cufile/gpu_backend.h"
#include "dropin/cufile/raw_enum.h"

namespace fgds::cufile {
namespace {

// The largest batch one cuFileBatchIOSetUp may ask for (NVIDIA's default
// max_batch_io_size, which kvikio and gdsio read from the properties).
constexpr unsigned kMaxBatchIoSize = 128;

CUfileDrvProps_t DefaultProperties() {
  CUfileDrvProps_t props = {};
  // No nvidia-fs: FGDS moves the bytes itself, through libfgds.
  props.nvfs.major_version = 0;
  props.nvfs.minor_version = 0;
  props.nvfs.poll_thresh_size = 4;
  props.nvfs.max_direct_io_size = 16384;
  props.nvfs.dstatusflags = 0;
  props.nvfs.dcontrolflags = 1u << CU_FILE_ALLOW_COMPAT_MODE;
  props.fflags =
      (1u << CU_FILE_BATCH_IO_SUPPORTED) | (1u << CU_FILE_STREAMS_SUPPORTED);
  props.max_device_cache_size = 131072;
  props.per_buffer_cache_size = 1024;
  props.max_device_pinned_mem_size = 33554432;
  props.max_batch_io_size = kMaxBatchIoSize;
  props.max_batch_io_timeout_msecs = 5;
  return props;
}

}  // namespace

Library& Library::Get() {
  // Never destroyed: cuFile calls may come from other libraries' static
  // destructors after ours would have run.
  static Library* library = [] {
    auto* created = new Library();
    created->props_ = DefaultProperties();
    return created;
  }();
  return *library;
}

CUfileError_t Library::Open() {
  int cu_result = 0;
  std::string message;
  if (Backend().Probe(&cu_result, &message) != 0) {
    return Status(CU_FILE_CUDA_DRIVER_ERROR, cu_result);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++open_count_;
  return Ok();
}

CUfileError_t Library::OpenImplicitly() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_count_ > 0) return Ok();
  }
  return Open();
}

CUfileError_t Library::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (--open_count_ == 0) ResetLocked();
  return Ok();
}

long Library::UseCount() {
  std::lock_guard<std::mutex> lock(mu_);
  return open_count_;
}

void Library::ResetLocked() {
  for (auto& [key, handle] : handles_) {
    std::lock_guard<std::mutex> handle_lock(handle->mu);
    for (fgds_driver* driver : handle->registered_with) {
      fgds_file_deregister(driver, handle->fd);
    }
    handle->registered_with.clear();
  }
  handles_.clear();
  for (auto& [base, buffer] : buffers_) {
    if (buffer.driver != nullptr) {
      fgds_buf_deregister(buffer.driver, const_cast<void*>(base));
    }
  }
  buffers_.clear();
  for (auto& [device, driver] : drivers_) fgds_driver_close(driver);
  drivers_.clear();
}

CUfileError_t Library::GetProperties(CUfileDrvProps_t* props) {
  if (props == nullptr) return Status(CU_FILE_INVALID_VALUE);
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  *props = props_;
  return Ok();
}

CUfileError_t Library::SetPollMode(bool poll, size_t threshold_kb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (poll) {
    props_.nvfs.dcontrolflags |= 1u << CU_FILE_USE_POLL_MODE;
  } else {
    props_.nvfs.dcontrolflags &= ~(1u << CU_FILE_USE_POLL_MODE);
  }
  props_.nvfs.poll_thresh_size = threshold_kb;
  return Ok();
}

CUfileError_t Library::SetMaxDirectIoSize(size_t kb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (kb == 0) return Status(CU_FILE_INVALID_VALUE);
  props_.nvfs.max_direct_io_size = kb;
  return Ok();
}

CUfileError_t Library::SetMaxCacheSize(size_t kb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (kb == 0 || kb > UINT32_MAX) return Status(CU_FILE_INVALID_VALUE);
  props_.max_device_cache_size = static_cast<unsigned>(kb);
  return Ok();
}

CUfileError_t Library::SetMaxPinnedMemSize(size_t kb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_count_ == 0) return Status(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (kb == 0 || kb > UINT32_MAX) return Status(CU_FILE_INVALID_VALUE);
  props_.max_device_pinned_mem_size = static_cast<unsigned>(kb);
  return Ok();
}

CUfileError_t Library::RegisterHandle(CUfileHandle_t* fh,
                                      const CUfileDescr_t* descr) {
  if (fh == nullptr || descr == nullptr) return Status(CU_FILE_INVALID_VALUE);
  const int type = RawEnum(descr->type);
  if (type != CU_FILE_HANDLE_TYPE_OPAQUE_FD) {
    // Windows handles and user-space file systems' callbacks: FGDS serves
    // file descriptors only.
    return Status(type == CU_FILE_HANDLE_TYPE_USERSPACE_FS
                      ? CU_FILE_IO_NOT_SUPPORTED
                      : CU_FILE_INVALID_FILE_TYPE);
  }
  struct stat st;
  if (fstat(descr->handle.fd, &st) != 0) return Status(CU_FILE_INVALID_VALUE);
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return Status(CU_FILE_INVALID_FILE_TYPE);
  }
  if (CUfileError_t status = OpenImplicitly(); status.err != CU_FILE_SUCCESS) {
    return status;
  }
  auto handle = std::make_shared<FileHandle>();
  handle->fd = descr->handle.fd;
  std::lock_guard<std::mutex> lock(mu_);
  handles_[handle.get()] = handle;
  *fh = handle.get();
  return Ok();
}

void Library::DeregisterHandle(CUfileHandle_t fh) {
  std::shared_ptr<FileHandle> handle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) return;
    handle = std::move(it->second);
    handles_.erase(it);
  }
  std::lock_guard<std::mutex> handle_lock(handle->mu);
  for (fgds_driver* driver : handle->registered_with) {
    fgds_file_deregister(driver, handle->fd);
  }
  handle->registered_with.clear();
}

std::shared_ptr<FileHandle> Library::FindHandle(CUfileHandle_t fh) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : it->second;
}

int Library::DriverForLocked(int device, fgds_driver** driver,
                             std::string* message) {
  auto it = drivers_.find(device);
  if (it != drivers_.end()) {
    *driver = it->second;
    return 0;
  }
  if (int error = Backend().OpenDriver(device, driver, message); error != 0) {
    return error;
  }
  drivers_[device] = *driver;
  return 0;
}

CUfileError_t Library::RegisterBuffer(const void* base, size_t length,
                                      int flags) {
  if (base == nullptr || length == 0 || flags != 0) {
    return Status(CU_FILE_INVALID_VALUE);
  }
  if (CUfileError_t status = OpenImplicitly(); status.err != CU_FILE_SUCCESS) {
    return status;
  }
  int device = -1;
  const bool on_device =
      Backend().DeviceOf(reinterpret_cast<uint64_t>(base), &device) == 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (buffers_.count(base) != 0) {
    return Status(CU_FILE_MEMORY_ALREADY_REGISTERED);
  }
  Buffer buffer;
  buffer.length = length;
  if (on_device) {
    std::string message;
    int error = DriverForLocked(device, &buffer.driver, &message);
    if (error == 0) {
      error =
          fgds_buf_register(buffer.driver, const_cast<void*>(base), length, 0);
    }
    if (error == -EFAULT) return Status(CU_FILE_INVALID_MAPPING_SIZE);
    if (error != 0) return StatusOf(error);
  }
  buffers_[base] = buffer;
  return Ok();
}

CUfileError_t Library::DeregisterBuffer(const void* base) {
  Buffer buffer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buffers_.find(base);
    if (it == buffers_.end()) return Status(CU_FILE_MEMORY_NOT_REGISTERED);
    buffer = it->second;
    buffers_.erase(it);
  }
  // Outside the lock: libfgds fences the I/O in flight on the buffer.
  if (buffer.driver != nullptr) {
    fgds_buf_deregister(buffer.driver, const_cast<void*>(base));
  }
  return Ok();
}

int Library::Resolve(const void* base, uint64_t offset, uint64_t size,
                     FileHandle& handle, Target* target, int* cu_result) {
  *cu_result = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = buffers_.find(base);
    if (it != buffers_.end() &&
        (offset > it->second.length || size > it->second.length - offset)) {
      return -EINVAL;
    }
  }
  int device = -1;
  if (Backend().DeviceOf(reinterpret_cast<uint64_t>(base), &device) != 0) {
    target->driver = nullptr;  // host memory
    return 0;
  }
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (int error = DriverForLocked(device, &target->driver, &message);
        error != 0) {
      return error;
    }
  }
  std::lock_guard<std::mutex> handle_lock(handle.mu);
  for (fgds_driver* driver : handle.registered_with) {
    if (driver == target->driver) return 0;
  }
  // Without the twins registered each I/O reopens them: still correct, so
  // a registration failure (another handle has this fd) is not an error.
  if (fgds_file_register(target->driver, handle.fd) == 0) {
    handle.registered_with.push_back(target->driver);
  }
  return 0;
}

}  // namespace fgds::cufile
