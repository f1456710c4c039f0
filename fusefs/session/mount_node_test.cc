// MountNodeOf off a FUSE mount: only a FUSE file handle of a file on the
// mount names a node of ours. The FUSE case itself needs a mount:
// tests/integration/usrbio_cross_user_test.cc.
#include "fusefs/session/mount_node.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

class MountNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = ::testing::TempDir() + "fgds-mount-node-XXXXXX";
    file_ = mkstemp(path.data());
    ASSERT_GE(file_, 0);
    unlink(path.c_str());
    struct stat st;
    ASSERT_EQ(fstat(file_, &st), 0);
    file_dev_ = st.st_dev;
  }
  void TearDown() override { close(file_); }

  int file_ = -1;
  dev_t file_dev_ = 0;
};

// A regular filesystem's own handle type is not a FUSE node's.
TEST_F(MountNodeTest, OtherFilesystemsHandlesAreRefused) {
  uint64_t node = 42;
  EXPECT_EQ(MountNodeOf(file_, file_dev_, &node), -EBADF);
  EXPECT_EQ(node, 42u);
}

// A pipe encodes a handle of the very type FUSE uses (Linux 6.6+ gives
// filesystems without export support a generic one from the inode number):
// only the device check keeps it out.
TEST_F(MountNodeTest, FilesOnAnotherDeviceAreRefused) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  uint64_t node = 42;
  EXPECT_EQ(MountNodeOf(pipe_fds[0], file_dev_, &node), -EBADF);
  EXPECT_EQ(node, 42u);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

}  // namespace
}  // namespace fgds::session
