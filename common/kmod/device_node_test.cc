#include "common/kmod/device_node.h"

#include <string>

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

}  // namespace
}  // namespace fgds::kmod
