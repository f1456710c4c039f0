#include "usrbio/direct/path.h"

#include <string>

#include "fgds/fgds.h"
#include "gtest/gtest.h"

namespace fgds::direct {
namespace {

TEST(ChoosePathTest, FirstMissingPieceIsNamed) {
  DirectProbe probe;
  PathChoice choice = ChoosePath(probe);
  EXPECT_EQ(choice.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(choice.why_not_direct.find("DMA_BUF_SUPPORTED"), std::string::npos);

  probe.dmabuf_supported = true;
  choice = ChoosePath(probe);
  EXPECT_EQ(choice.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(choice.why_not_direct.find("PCI address"), std::string::npos);

  probe.device_node = "/dev/fgds_0000_3b_00_0";
  choice = ChoosePath(probe);
  EXPECT_EQ(choice.path, FGDS_GPU_PATH_BOUNCE);
  EXPECT_NE(choice.why_not_direct.find("/dev/fgds_0000_3b_00_0 does not exist"),
            std::string::npos);
  EXPECT_NE(choice.why_not_direct.find("kernel module is not loaded"),
            std::string::npos);

  probe.device_node_present = true;
  choice = ChoosePath(probe);
  EXPECT_EQ(choice.path, FGDS_GPU_PATH_DIRECT);
  EXPECT_EQ(choice.why_not_direct, "");
}

TEST(ProbeDirectTest, NoModuleHere) {
  // CI machines cannot load the fgds module; a missing node must say so.
  const DirectProbe probe = ProbeDirect(true, "0000:ff:1f.7");
  EXPECT_EQ(probe.device_node, "/dev/fgds_0000_ff_1f_7");
  EXPECT_FALSE(probe.device_node_present);
}

}  // namespace
}  // namespace fgds::direct
