#include "usrbio/cuda/gpu_allowed.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::cuda {
namespace {

TEST(GpuAllowedTest, OutOfSubsetDevicesAreRefusedWithTheirName) {
  gpu::GpuSubset subset;
  std::string why;
  ASSERT_EQ(gpu::ParseGpuSubset("0,0000:c1:00.0", &subset, &why), 0);
  const gpu::GpuIdentity gpu0{0, "0000:1b:00.0", ""};
  const gpu::GpuIdentity gpu1{1, "0000:3b:00.0", ""};
  const gpu::GpuIdentity gpu2{2, "0000:c1:00.0", ""};
  EXPECT_EQ(CheckGpuAllowedBy(subset, "FGDS_GPUS", gpu0, &why), 0);
  EXPECT_EQ(CheckGpuAllowedBy(subset, "FGDS_GPUS", gpu2, &why), 0);
  EXPECT_EQ(CheckGpuAllowedBy(subset, "FGDS_GPUS", gpu1, &why), -ENODEV);
  EXPECT_EQ(why,
            "GPU 1 (0000:3b:00.0) is not in FGDS_GPUS=0,0000:c1:00.0: use a "
            "GPU of the subset, or widen it");
}

}  // namespace
}  // namespace fgds::cuda
