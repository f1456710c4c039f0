#include "backend/local/inode_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

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

// Descriptors this process holds.
int OpenFdCount() {
  int count = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) count += e->d_name[0] != '.';
  closedir(d);
  return count - 1;  // the directory stream's own
}

// A private directory of `files` empty files f0..f<n-1>, removed at the end.
class InodeTableFilesTest : public ::testing::TestWithParam<InodeTable::Reach> {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "fgds-inode-table-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    root_ = OpenPath(dir_.c_str());
    ASSERT_GE(root_, 0);
    table_ = std::make_unique<InodeTable>(root_, StatFd(root_), GetParam());
  }
  void TearDown() override {
    table_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Creates `name` and adds it to the table (one lookup).
  NodeId Make(const std::string& name) {
    int fd = open((dir_ + "/" + name).c_str(), O_CREAT | O_WRONLY, 0644);
    EXPECT_GE(fd, 0);
    close(fd);
    int path = openat(root_, name.c_str(), O_PATH | O_NOFOLLOW);
    EXPECT_GE(path, 0);
    return table_->Insert(path, StatFd(path));
  }
  bool handles() const {
    return GetParam() == InodeTable::Reach::kHandles && table_->uses_handles();
  }

  std::string dir_;
  int root_ = -1;  // owned by table_
  std::unique_ptr<InodeTable> table_;
};

// The point of file handles: the kernel may know any number of nodes while
// the daemon holds no descriptor for them. The fallback pins one each.
TEST_P(InodeTableFilesTest, KnownNodesCostDescriptorsOnlyWithoutHandles) {
  constexpr int kFiles = 2000;
  const int before = OpenFdCount();
  std::vector<NodeId> nodes;
  for (int i = 0; i < kFiles; ++i) {
    nodes.push_back(Make("f" + std::to_string(i)));
  }
  EXPECT_EQ(table_->size(), static_cast<size_t>(kFiles));
  if (handles()) {
    // One descriptor at most: the backing mount's, kept for
    // open_by_handle_at.
    EXPECT_LE(OpenFdCount(), before + 1);
  } else {
    EXPECT_EQ(OpenFdCount(), before + kFiles);
  }
  // Every node still reaches its own file.
  for (int i = 0; i < kFiles; i += 97) {
    PathFd fd = table_->Open(table_->Get(nodes[i]));
    ASSERT_TRUE(fd.ok()) << fd.error();
    struct stat by_node = StatFd(fd.get());
    struct stat by_name;
    ASSERT_EQ(fstatat(root_, ("f" + std::to_string(i)).c_str(), &by_name, 0),
              0);
    EXPECT_EQ(by_node.st_ino, by_name.st_ino);
  }
  for (NodeId node : nodes) table_->Forget(node, 1);
  EXPECT_EQ(table_->size(), 0u);
  EXPECT_LE(OpenFdCount(), before + (handles() ? 1 : 0));
}

// A file removed in the backing directory is gone for a node reached by
// handle (ENOENT), unless it was open: then the open file keeps it
// reachable, as a pinned node is, until the node is forgotten (the kernel
// may write back times after the last close).
TEST_P(InodeTableFilesTest, RemovedFileIsReachableOnlyWhileOpen) {
  NodeId closed = Make("closed");
  NodeId open_node = Make("open");
  int file = open((dir_ + "/open").c_str(), O_RDWR);
  ASSERT_GE(file, 0);
  table_->FileOpened(table_->Get(open_node), file);
  ASSERT_EQ(unlinkat(root_, "closed", 0), 0);
  ASSERT_EQ(unlinkat(root_, "open", 0), 0);

  PathFd gone = table_->Open(table_->Get(closed));
  if (handles()) {
    EXPECT_EQ(gone.error(), -ENOENT);
  } else {
    EXPECT_TRUE(gone.ok());  // the pin keeps it, which is the fallback's cost
  }
  {
    PathFd still = table_->Open(table_->Get(open_node));
    ASSERT_TRUE(still.ok()) << still.error();
    EXPECT_EQ(StatFd(still.get()).st_nlink, 0u);
  }

  table_->FileClosed(table_->Get(open_node));
  close(file);
  const int before_forget = OpenFdCount();
  EXPECT_TRUE(table_->Open(table_->Get(open_node)).ok());
  table_->Forget(closed, 1);
  table_->Forget(open_node, 1);
  EXPECT_EQ(OpenFdCount(), before_forget - (handles() ? 1 : 2));
}

// A file that still has a name costs no descriptor once its last open
// file is closed.
TEST_P(InodeTableFilesTest, ClosingTheLastFileOfANamedInodeDropsItsDescriptor) {
  NodeId node = Make("named");
  const int before = OpenFdCount();
  int file = open((dir_ + "/named").c_str(), O_RDWR);
  ASSERT_GE(file, 0);
  table_->FileOpened(table_->Get(node), file);
  table_->FileOpened(table_->Get(node), file);
  table_->FileClosed(table_->Get(node));
  table_->FileClosed(table_->Get(node));
  close(file);
  EXPECT_EQ(OpenFdCount(), before);
  table_->Forget(node, 1);
}

// InsertOpened (a create) makes the node and counts the open file in one,
// with the O_PATH descriptor it is given as the open pin: one descriptor
// while open, none left (with handles) once closed and forgotten, and an
// unlinked file stays reachable through it as after FileOpened.
TEST_P(InodeTableFilesTest, InsertOpenedUsesItsDescriptorAsTheOpenPin) {
  const int before = OpenFdCount();
  const std::string path = dir_ + "/created";
  int file = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(file, 0);
  int path_fd = OpenPath(path.c_str());
  ASSERT_GE(path_fd, 0);
  NodeId node = table_->InsertOpened(path_fd, StatFd(path_fd));
  ASSERT_NE(node, InodeTable::kNoNode);
  // The file and the pin (handles) or the node's own pin (fallback).
  EXPECT_EQ(OpenFdCount(), before + 2);
  ASSERT_EQ(unlink(path.c_str()), 0);
  {
    PathFd still = table_->Open(table_->Get(node));
    ASSERT_TRUE(still.ok()) << still.error();
    EXPECT_EQ(StatFd(still.get()).st_nlink, 0u);
  }
  // A second open of the same inode shares the pin.
  table_->FileOpened(table_->Get(node), file);
  EXPECT_EQ(OpenFdCount(), before + 2);
  table_->FileClosed(table_->Get(node));
  table_->FileClosed(table_->Get(node));
  close(file);
  table_->Forget(node, 1);
  EXPECT_EQ(OpenFdCount(), before);
}

// Without file handles each node pins a descriptor: past the bound, a new
// node is refused (its descriptor closed, nothing kept), while nodes
// already known still gain lookups, and a forgotten node makes room.
TEST(InodeTablePinnedTest, NodesPinningADescriptorAreBounded) {
  std::string dir = ::testing::TempDir() + "fgds-inode-bound-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int root = OpenPath(dir.c_str());
  ASSERT_GE(root, 0);
  {
    InodeTable table(root, StatFd(root), InodeTable::Reach::kPinned,
                     /*max_pinned=*/3);
    EXPECT_EQ(table.max_pinned(), 3u);
    auto insert = [&](const std::string& name) {
      const std::string path = dir + "/" + name;
      int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
      close(fd);
      int path_fd = OpenPath(path.c_str());
      EXPECT_GE(path_fd, 0);
      NodeId node = table.Insert(path_fd, StatFd(path_fd));
      // Refused: the descriptor was closed, not kept.
      if (node == InodeTable::kNoNode) {
        EXPECT_EQ(fcntl(path_fd, F_GETFD), -1);
      }
      return node;
    };
    NodeId a = insert("a");
    NodeId b = insert("b");
    NodeId c = insert("c");
    ASSERT_NE(a, InodeTable::kNoNode);
    ASSERT_NE(b, InodeTable::kNoNode);
    ASSERT_NE(c, InodeTable::kNoNode);
    EXPECT_EQ(table.pinned(), 3u);
    const int before = OpenFdCount();
    EXPECT_EQ(insert("d"), InodeTable::kNoNode);
    EXPECT_EQ(OpenFdCount(), before);
    EXPECT_EQ(table.size(), 3u);
    // A known node is no new pin.
    EXPECT_EQ(insert("a"), a);
    table.Forget(a, 2);
    EXPECT_EQ(table.pinned(), 2u);
    NodeId d = insert("d");
    EXPECT_NE(d, InodeTable::kNoNode);
    for (NodeId n : {b, c, d}) table.Forget(n, 1);
    EXPECT_EQ(table.pinned(), 0u);
  }
  std::filesystem::remove_all(dir);
}

// A directory keeps the descriptor of its first Open, so that the
// operations in it skip open_by_handle_at; a bounded number of them do
// (a quarter of max_pinned), and Forget closes it.
TEST(InodeTableDirsTest, DirectoriesKeepABoundedNumberOfDescriptors) {
  std::string dir = ::testing::TempDir() + "fgds-inode-dirs-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int root = OpenPath(dir.c_str());
  ASSERT_GE(root, 0);
  {
    InodeTable table(root, StatFd(root), InodeTable::Reach::kHandles,
                     /*max_pinned=*/8);
    if (!table.uses_handles()) {
      std::filesystem::remove_all(dir);
      GTEST_SKIP() << "needs file handles (root, a filesystem with them)";
    }
    EXPECT_EQ(table.max_cached_dirs(), 2u);
    auto insert = [&](const std::string& name, bool is_dir) {
      const std::string path = dir + "/" + name;
      if (is_dir) {
        EXPECT_EQ(mkdir(path.c_str(), 0755), 0);
      } else {
        close(open(path.c_str(), O_CREAT | O_WRONLY, 0644));
      }
      int path_fd = OpenPath(path.c_str());
      EXPECT_GE(path_fd, 0);
      return table.Insert(path_fd, StatFd(path_fd));
    };
    // Whether Open hands out a descriptor that outlives the PathFd (kept
    // by the node) and the same one each time.
    auto kept = [&](NodeId node) {
      int first, second;
      {
        PathFd fd = table.Open(table.Get(node));
        EXPECT_TRUE(fd.ok());
        first = fd.get();
      }
      {
        PathFd fd = table.Open(table.Get(node));
        second = fd.get();
      }
      return first == second && fcntl(first, F_GETFD) != -1;
    };
    NodeId a = insert("a", true);
    NodeId b = insert("b", true);
    NodeId c = insert("c", true);
    NodeId f = insert("f", false);
    EXPECT_TRUE(kept(a));
    EXPECT_TRUE(kept(b));
    EXPECT_EQ(table.cached_dirs(), 2u);
    const int before = OpenFdCount();
    EXPECT_FALSE(kept(c));  // past the bound: opened per operation
    EXPECT_FALSE(kept(f));  // files never keep one
    EXPECT_EQ(OpenFdCount(), before);
    EXPECT_EQ(table.cached_dirs(), 2u);
    // The kept descriptor reaches the directory itself.
    {
      PathFd fd = table.Open(table.Get(a));
      struct stat by_node = StatFd(fd.get());
      struct stat by_name;
      ASSERT_EQ(stat((dir + "/a").c_str(), &by_name), 0);
      EXPECT_EQ(by_node.st_ino, by_name.st_ino);
    }
    table.Forget(a, 1);
    EXPECT_EQ(table.cached_dirs(), 1u);
    EXPECT_EQ(OpenFdCount(), before - 1);
    EXPECT_TRUE(kept(c));  // room again
    for (NodeId n : {b, c, f}) table.Forget(n, 1);
    EXPECT_EQ(table.cached_dirs(), 0u);
    EXPECT_EQ(OpenFdCount(), before - 2);
  }
  std::filesystem::remove_all(dir);
}

// The default bound is half the descriptor limit.
TEST(InodeTablePinnedTest, TheDefaultBoundIsHalfTheDescriptorLimit) {
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  int root = OpenPath("/");
  InodeTable table(root, StatFd(root), InodeTable::Reach::kPinned);
  EXPECT_EQ(table.max_pinned(),
            std::max<size_t>(static_cast<size_t>(limit.rlim_cur / 2), 16));
}

INSTANTIATE_TEST_SUITE_P(Reach, InodeTableFilesTest,
                         ::testing::Values(InodeTable::Reach::kHandles,
                                           InodeTable::Reach::kPinned),
                         [](const auto& param_info) {
                           return param_info.param ==
                                          InodeTable::Reach::kHandles
                                      ? std::string("Handles")
                                      : std::string("Pinned");
                         });

}  // namespace
}  // namespace fgds::backend
