#include "tests/gpu/gpu_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "usrbio/cuda/cuda_error.h"

namespace fgds::testing {

GpuEnv& GpuEnv::Get() {
  static GpuEnv* env = new GpuEnv();
  return *env;
}

GpuEnv::GpuEnv() {
  const cuda::CudaLoad& load = cuda::Cuda();
  if (load.api == nullptr) {
    why_not_ = "no GPU: " + load.message;
    return;
  }
  int count = 0;
  if (load.api->cuDeviceGetCount(&count) != cuda::kCudaSuccess || count < 1) {
    why_not_ = "no CUDA device";
    return;
  }
  cuda::CUdevice device = 0;
  cuda::CUresult result = load.api->cuDeviceGet(&device, 0);
  if (result == cuda::kCudaSuccess) {
    result = load.api->cuDevicePrimaryCtxRetain(&context_, device);
  }
  if (result != cuda::kCudaSuccess) {
    why_not_ = "no context: " + cuda::CuResultText(load.api, result);
    return;
  }
  api_ = load.api;
}

void GpuEnv::MakeCurrent() const {
  ASSERT_EQ(api_->cuCtxSetCurrent(context_), cuda::kCudaSuccess);
}

DeviceBuffer::DeviceBuffer(uint64_t size) : size_(size) {
  const cuda::CudaApi& api = GpuEnv::Get().api();
  cuda::CUdeviceptr ptr = 0;
  const cuda::CUresult result = api.cuMemAlloc(&ptr, size);
  EXPECT_EQ(result, cuda::kCudaSuccess) << cuda::CuResultText(&api, result);
  address_ = ptr;
}

DeviceBuffer::~DeviceBuffer() { Free(); }

void DeviceBuffer::Free() {
  if (address_ != 0) GpuEnv::Get().api().cuMemFree(address_);
  address_ = 0;
}

void DeviceBuffer::Fill(uint8_t byte) {
  ASSERT_EQ(GpuEnv::Get().api().cuMemsetD8(address_, byte, size_),
            cuda::kCudaSuccess);
}

void DeviceBuffer::Upload(uint64_t offset, const void* data, uint64_t size) {
  ASSERT_LE(offset + size, size_);
  ASSERT_EQ(GpuEnv::Get().api().cuMemcpyHtoD(address_ + offset, data, size),
            cuda::kCudaSuccess);
}

std::vector<uint8_t> DeviceBuffer::Download(uint64_t offset,
                                            uint64_t size) const {
  std::vector<uint8_t> out(size);
  EXPECT_LE(offset + size, size_);
  EXPECT_EQ(
      GpuEnv::Get().api().cuMemcpyDtoH(out.data(), address_ + offset, size),
      cuda::kCudaSuccess);
  return out;
}

ScratchDir::ScratchDir() {
  const char* base = std::getenv("FGDS_GPU_TEST_DIR");
  std::string templ =
      std::string(base != nullptr ? base : ".") + "/fgds-gpu-test.XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ << ": " << std::strerror(errno);
    return;
  }
  path_ = std::filesystem::absolute(buf.data()).string();
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::WriteFile(const std::string& name,
                                  const std::vector<uint8_t>& bytes) const {
  const std::string path = path_ + "/" + name;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0) << path << ": " << std::strerror(errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done,
                             static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  EXPECT_EQ(done, bytes.size());
  fsync(fd);
  close(fd);
  return path;
}

std::vector<uint8_t> ScratchDir::ReadFile(const std::string& name) const {
  const std::string path = path_ + "/" + name;
  std::vector<uint8_t> bytes(std::filesystem::file_size(path));
  const int fd = open(path.c_str(), O_RDONLY);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pread(fd, bytes.data() + done, bytes.size() - done,
                            static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  EXPECT_EQ(done, bytes.size());
  return bytes;
}

ScopedDriver::ScopedDriver(const fgds_driver_params* params) {
  const int error = fgds_driver_open(&driver_, params);
  EXPECT_EQ(error, 0) << fgds_last_error();
}

ScopedDriver::~ScopedDriver() {
  if (driver_ != nullptr) {
    EXPECT_EQ(fgds_driver_close(driver_), 0) << fgds_last_error();
  }
}

void DropFileCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

}  // namespace fgds::testing
