// File: tests/gpu/gpu_env.h
//
// What the GPU tests share: the CUDA driver (through usrbio/cuda, the same
// loader libfgds uses), device 0's primary context made current on the
// calling thread, device buffers, and a scratch directory on a disk that
// supports O_DIRECT. Tests call FGDS_REQUIRE_GPU() first: without libcuda
// or a GPU they skip, with the reason.
#ifndef FGDS_TESTS_GPU_GPU_ENV_H_
#define FGDS_TESTS_GPU_GPU_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fgds/fgds.h"
#include "gtest/gtest.h"
#include "tests/lib/random_bytes.h"
#include "usrbio/cuda/cuda_api.h"

namespace fgds::testing {

// GpuEnv::Get() loads CUDA and retains device 0's primary context once per
// process (never released: tests come and go, the context stays).
class GpuEnv {
 public:
  static GpuEnv& Get();
  bool available() const { return api_ != nullptr; }
  const std::string& why_not() const { return why_not_; }
  const cuda::CudaApi& api() const { return *api_; }
  cuda::CUcontext context() const { return context_; }
  // MakeCurrent binds the context to the calling thread (each new thread
  // must call it before using CUDA or opening a driver).
  void MakeCurrent() const;

 private:
  GpuEnv();
  const cuda::CudaApi* api_ = nullptr;
  cuda::CUcontext context_ = nullptr;
  std::string why_not_;
};

#define FGDS_REQUIRE_GPU()                                         \
  do {                                                             \
    ::fgds::testing::GpuEnv& env = ::fgds::testing::GpuEnv::Get(); \
    if (!env.available()) GTEST_SKIP() << env.why_not();           \
    env.MakeCurrent();                                             \
  } while (0)

// DeviceBuffer owns a cuMemAlloc'd range. Download/Upload copy
// synchronously.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(uint64_t size);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t address() const { return address_; }
  void* ptr() const { return reinterpret_cast<void*>(address_); }
  uint64_t size() const { return size_; }
  // Free releases the memory now (tests that free under I/O).
  void Free();

  void Fill(uint8_t byte);
  void Upload(uint64_t offset, const void* data, uint64_t size);
  std::vector<uint8_t> Download(uint64_t offset, uint64_t size) const;

 private:
  uint64_t address_ = 0;
  uint64_t size_ = 0;
};

// ScratchDir is a fresh directory under $FGDS_GPU_TEST_DIR (default: the
// current directory; tmpfs has no O_DIRECT), removed with its files.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  // WriteFile creates `name` holding `bytes` (through the page cache,
  // then fsync'ed) and returns its path.
  std::string WriteFile(const std::string& name,
                        const std::vector<uint8_t>& bytes) const;
  std::vector<uint8_t> ReadFile(const std::string& name) const;

 private:
  std::string path_;
};

// ScopedDriver opens an fgds driver on the calling thread's context
// (params may be null) and closes it at the end of the scope.
class ScopedDriver {
 public:
  explicit ScopedDriver(const fgds_driver_params* params = nullptr);
  ~ScopedDriver();
  ScopedDriver(const ScopedDriver&) = delete;
  ScopedDriver& operator=(const ScopedDriver&) = delete;
  fgds_driver* get() const { return driver_; }

 private:
  fgds_driver* driver_ = nullptr;
};

// DropFileCache asks the kernel to forget the file's cached pages (after
// fsync), so the next read comes from the disk. Best effort.
void DropFileCache(const std::string& path);

}  // namespace fgds::testing

#endif  // FGDS_TESTS_GPU_GPU_ENV_H_
