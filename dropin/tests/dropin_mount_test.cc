// Runs the drop-ins' user programs (C, against cufile.h and
// hf3fs_usrbio.h) on a real fgds mount: each gets a directory of the mount
// and exits 0 only when every one of its checks passed.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

class DropinMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto fs = MountedFs::Start();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }

  // Runs `program` on the mount; returns its exit status and output.
  int Run(const std::string& program, std::string* output) {
    const std::string command = program + " " + fs_->mountpoint() + " 2>&1";
    FILE* out = popen(command.c_str(), "r");
    if (out == nullptr) return -1;
    char line[512];
    while (fgets(line, sizeof(line), out) != nullptr) *output += line;
    const int status = pclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::unique_ptr<MountedFs> fs_;
};

TEST_F(DropinMountTest, CufileProgramRoundTripsThroughTheMount) {
  std::string output;
  EXPECT_EQ(Run(FGDS_CUFILE_ROUNDTRIP_TEST, &output), 0) << output;
  EXPECT_NE(output.find("cufile_roundtrip_test: ok"), std::string::npos)
      << output;
}

TEST_F(DropinMountTest, Hf3fsProgramRunsOnTheMount) {
  std::string output;
  EXPECT_EQ(Run(FGDS_HF3FS_USRBIO_TEST, &output), 0) << output;
  EXPECT_NE(output.find("hf3fs_usrbio_test: ok"), std::string::npos) << output;
}

// 3FS's GDR calls on a slice of fake device memory: what the device
// script's hf3fs_gpu phase does on the GPU machine.
TEST_F(DropinMountTest, Hf3fsGpuIovsReadAndWriteThroughTheMount) {
  std::string output;
  EXPECT_EQ(Run(FGDS_HF3FS_GPU_TEST, &output), 0) << output;
  EXPECT_NE(output.find("hf3fs_gpu_test: ok"), std::string::npos) << output;
}

}  // namespace
}  // namespace fgds::testing
