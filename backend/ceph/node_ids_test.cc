#include "backend/ceph/node_ids.h"

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

TEST(CephNodeIdsTest, WholeFileSystemIsIdentity) {
  for (uint64_t ino : {uint64_t{1}, uint64_t{2}, uint64_t{0x10000000000}}) {
    EXPECT_EQ(NodeOfIno(ino, 1), ino);
    EXPECT_EQ(InoOfNode(ino, 1), ino);
  }
}

TEST(CephNodeIdsTest, SubtreeRootSwapsWithInodeOne) {
  const uint64_t root = 0x10000000002ull;
  EXPECT_EQ(NodeOfIno(root, root), kCephRootNode);
  EXPECT_EQ(NodeOfIno(1, root), root);
  EXPECT_EQ(NodeOfIno(0x10000000005ull, root), 0x10000000005ull);
  for (uint64_t ino : {uint64_t{1}, root, uint64_t{0x10000000005}}) {
    EXPECT_EQ(InoOfNode(NodeOfIno(ino, root), root), ino);
  }
}

}  // namespace
}  // namespace fgds::backend
