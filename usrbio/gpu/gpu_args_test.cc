// fgds_iov_wrap_gpu's argument checks, on any machine: without a CUDA
// driver it must fail cleanly (-ENODEV), never crash, and leave errno. And
// the GPU path query and the direct-entry rule, which need no device.
#include <cerrno>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "usrbio/cuda/cuda_api.h"
#include "usrbio/gpu/gpu_iov.h"

namespace {

TEST(GpuIovArgsTest, RejectsBadArguments) {
  fgds_session session = {};
  fgds_iov iov = {};
  errno = 1234;
  EXPECT_EQ(fgds_iov_wrap_gpu(nullptr, &iov, 0x1000, 4096, nullptr), -EINVAL);
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, nullptr, 0x1000, 4096, nullptr),
            -EINVAL);
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0, 4096, nullptr), -EINVAL);
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 0, nullptr), -EINVAL);
  fgds_iov_gpu_params p = {};
  p.flags = 0x80;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.reserved[2] = 1;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.reserved0 = 1;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.chunk_bytes = 1000;  // not a multiple of 4096
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.chunk_bytes = FGDS_IOV_GPU_MAX_CHUNK + 4096;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.staging_bytes = FGDS_IOV_GPU_MAX_STAGING + 1;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  p = {};
  p.device = -1;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -EINVAL);
  EXPECT_EQ(errno, 1234);
}

TEST(GpuIovArgsTest, WithoutCudaItIsNoDevice) {
  const fgds::cuda::CudaLoad& cuda = fgds::cuda::Cuda();
  if (cuda.api != nullptr) GTEST_SKIP() << "a CUDA driver is present";
  fgds_session session = {};
  fgds_iov iov = {};
  errno = 77;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, nullptr), -ENODEV);
  fgds_iov_gpu_params p = {};
  p.flags = FGDS_IOV_GPU_PRIMARY_CTX;
  EXPECT_EQ(fgds_iov_wrap_gpu(&session, &iov, 0x1000, 4096, &p), -ENODEV);
  EXPECT_EQ(errno, 77);
  EXPECT_EQ(iov.gpu, nullptr);
}

TEST(GpuIovArgsTest, HostIovsHaveNoGpuPath) {
  fgds_iov host = {};  // gpu == NULL
  uint32_t reason = 42;
  errno = 5;
  EXPECT_EQ(fgds_iov_gpu_path(&host, &reason), -EINVAL);
  EXPECT_EQ(fgds_iov_gpu_path(nullptr, &reason), -EINVAL);
  EXPECT_EQ(reason, 42u);
  EXPECT_EQ(errno, 5);
}

// Which entries on a GPU iov skip the stager (the daemon's O_DIRECT rules
// for GPU memory, fusefs/session/sqe_check.h).
TEST(GpuIovArgsTest, OnlyDirectShapedEntriesGoDirect) {
  using fgds::usrbio::gpu::DirectEntry;
  fgds::usrbio::gpu::GpuIov g;
  const uint64_t dev = 0x7f0000200000;
  g.direct = true;
  g.dev_base = dev;
  g.direct_size = uint64_t{2} << 30;
  EXPECT_TRUE(DirectEntry(&g, dev, 0, 4096, 0, 0));
  EXPECT_TRUE(DirectEntry(&g, dev + 8192, 1 << 20, uint64_t{1} << 30, 0, 0));
  struct Case {
    const char* name;
    uint64_t dev, offset, len;
    uint32_t sqe_flags, ior_flags;
  } bounced[] = {
      {"unaligned address", dev + 512, 0, 4096, 0, 0},
      {"unaligned offset", dev, 100, 4096, 0, 0},
      {"unaligned length", dev, 0, 4095, 0, 0},
      {"over 1 GiB", dev, 0, (uint64_t{1} << 30) + 4096, 0, 0},
      {"entry buffered", dev, 0, 4096, FGDS_SQE_BUFFERED, 0},
      {"ring buffered", dev, 0, 4096, 0, FGDS_IOR_BUFFERED},
      {"below the iov", dev - 4096, 0, 4096, 0, 0},
      {"past the mapped part", dev + (uint64_t{2} << 30) - 4096, 0, 8192, 0, 0},
  };
  for (const Case& c : bounced) {
    EXPECT_FALSE(
        DirectEntry(&g, c.dev, c.offset, c.len, c.sqe_flags, c.ior_flags))
        << c.name;
  }
  g.direct = false;  // the daemon said BOUNCE
  EXPECT_FALSE(DirectEntry(&g, dev, 0, 4096, 0, 0));
}

}  // namespace
