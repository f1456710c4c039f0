// File: tests/integration/usrbio_gpu_harness.h
//
// What the usrbio GPU iov tests share: a mounted daemon (UsrbioTest), fake
// device memory (direct::FakeDeviceOps, host blocks with buffer ids)
// injected through the library's internal entry point, and an owner for
// GPU iovs. The whole bounce pipeline runs for real (staging memfd, ring,
// daemon, files); only the device copies are memcpy.
#ifndef FGDS_TESTS_INTEGRATION_USRBIO_GPU_HARNESS_H_
#define FGDS_TESTS_INTEGRATION_USRBIO_GPU_HARNESS_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/usrbio_harness.h"
#include "usrbio/direct/fake_device_ops.h"
#include "usrbio/gpu/gpu_iov.h"

namespace fgds::testing {

struct FakeGpuIov {
  fgds_iov iov = {};
  int result = -1;
  FakeGpuIov(fgds_session* s, direct::DeviceOps* ops, uint64_t dev,
             uint64_t size, uint64_t staging = 0, uint32_t chunk = 0) {
    fgds_iov_gpu_params p = {};
    p.staging_bytes = staging;
    p.chunk_bytes = chunk;
    result = usrbio::gpu::WrapGpuIov(s, &iov, dev, size, &p, ops);
  }
  ~FakeGpuIov() {
    if (result == 0) fgds_iov_destroy(&iov);
  }
};

class UsrbioGpuTest : public UsrbioTest {
 protected:
  // Writes `size` pattern bytes to `name` in the backing directory.
  std::string MakeFile(const std::string& name, uint64_t size, uint64_t seed) {
    std::vector<char> data(size);
    FillPattern(data.data(), size, seed, 0);
    int fd = open(Backing(name).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(pwrite(fd, data.data(), size, 0), static_cast<ssize_t>(size));
    close(fd);
    return Mnt(name);
  }
  int Register(fgds_session* s, const std::string& path, int flags) {
    int fd = open(path.c_str(), flags);
    EXPECT_GE(fd, 0) << path;
    int id = fgds_fd_register(s, fd, 0);
    close(fd);
    return id;
  }
  static char* Dev(uint64_t address, uint64_t offset = 0) {
    return reinterpret_cast<char*>(address + offset);
  }

  direct::FakeDeviceOps ops_;
};

}  // namespace fgds::testing

#endif  // FGDS_TESTS_INTEGRATION_USRBIO_GPU_HARNESS_H_
