#include "backend/local/inode_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

int OpenPath(const char* path) { return open(path, O_PATH | O_NOFOLLOW); }

struct stat StatFd(int fd) {
  struct stat st;
  fstatat(fd, "", &st, AT_EMPTY_PATH);
  return st;
}

TEST(InodeTableTest, SameInodeSharesOneNodeAndCountsLookups) {
  int root = OpenPath("/");
  InodeTable table(root, StatFd(root));
  int a = OpenPath("/etc");
  int b = OpenPath("/etc");
  NodeId first = table.Insert(a, StatFd(a));
  NodeId second = table.Insert(b, StatFd(b));
  EXPECT_EQ(first, second);
  EXPECT_GE(first, kFirstNodeId);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Get(first).nlookup, 2u);
  table.Forget(first, 1);
  EXPECT_EQ(table.size(), 1u);
  table.Forget(first, 1);
  EXPECT_EQ(table.size(), 0u);
}

TEST(InodeTableTest, RootIsNodeOneAndNeverForgotten) {
  int root = OpenPath("/");
  InodeTable table(root, StatFd(root));
  int again = OpenPath("/");
  EXPECT_EQ(table.Insert(again, StatFd(again)), kRootNode);
  table.Forget(kRootNode, 100);
  EXPECT_EQ(&table.Get(kRootNode), &table.root());
}

TEST(InodeTableDeathTest, UnknownSmallIdAborts) {
  // Re-executing the binary is safe with the threads sanitizers start.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int root = OpenPath("/");
  InodeTable table(root, StatFd(root));
  EXPECT_DEATH(table.Get(7), "unknown node id");
}

TEST(InodeTableDeathTest, ForgetMoreThanLookedUpAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int root = OpenPath("/");
  InodeTable table(root, StatFd(root));
  int fd = OpenPath("/etc");
  NodeId node = table.Insert(fd, StatFd(fd));
  EXPECT_DEATH(table.Forget(node, 2), "forget");
}

}  // namespace
}  // namespace fgds::backend
