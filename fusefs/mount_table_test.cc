#include "fusefs/mount_table.h"

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

TEST(MountTableTest, ParsesFuseLine) {
  auto info = ParseMountInfoLine(
      "36 35 0:52 / /mnt/fgds rw,nosuid,nodev,relatime shared:1 - fuse.fgds "
      "fgds rw,user_id=0,group_id=0,default_permissions,allow_other");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->major, 0u);
  EXPECT_EQ(info->minor, 52u);
  EXPECT_EQ(info->mountpoint, "/mnt/fgds");
  EXPECT_EQ(info->fstype, "fuse.fgds");
}

TEST(MountTableTest, UnescapesOctal) {
  auto info = ParseMountInfoLine(
      "36 35 8:1 / /mnt/with\\040space rw - ext4 /dev/sda1 rw");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->mountpoint, "/mnt/with space");
  EXPECT_EQ(info->fstype, "ext4");
}

TEST(MountTableTest, RejectsMalformed) {
  EXPECT_FALSE(ParseMountInfoLine("").has_value());
  EXPECT_FALSE(ParseMountInfoLine("36 35 0:52 / /mnt rw").has_value());
  EXPECT_FALSE(ParseMountInfoLine("36 35 x:y / /mnt rw shared:1 - ext4 a b")
                   .has_value());
  EXPECT_FALSE(ParseMountInfoLine("36 35 0:1 / /mnt rw a b c d").has_value());
  EXPECT_FALSE(ParseMountInfoLine("1 2 3:4 / /m\\0 o - ").has_value());
}

TEST(MountTableTest, FindsRoot) {
  auto info = FindMount("/");
  ASSERT_TRUE(info.has_value());
  EXPECT_FALSE(info->fstype.empty());
}

}  // namespace
}  // namespace fgds::fusefs
