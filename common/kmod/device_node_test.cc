#include "common/kmod/device_node.h"

#include <string>

#include "fgds/fgds.h"
#include "gtest/gtest.h"

namespace fgds::kmod {
namespace {

TEST(FgdsDeviceNodeTest, FromCudaBusId) {
  EXPECT_EQ(FgdsDeviceNode("0000:3B:00.0"), "/dev/fgds_0000_3b_00_0");
  EXPECT_EQ(FgdsDeviceNode("0001:c1:1f.7"), "/dev/fgds_0001_c1_1f_7");
}

TEST(FgdsDeviceNodeTest, RejectsGarbage) {
  for (const char* text : {"", "3b:00.0", "0000:3b:00", "0000:3b:00.0x",
                           "0000:3b:20.0", "0000:3b:00.8", "zz:zz:zz.z"}) {
    EXPECT_EQ(FgdsDeviceNode(text), "") << text;
  }
}

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
}  // namespace fgds::kmod
