// fgds_iov_wrap_gpu's argument checks, on any machine: without a CUDA
// driver it must fail cleanly (-ENODEV), never crash, and leave errno.
#include <cerrno>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "usrbio/cuda/cuda_api.h"

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

}  // namespace
