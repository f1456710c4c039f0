#include "common/kmod/storage_device.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "gtest/gtest.h"

namespace fgds::kmod {
namespace {

TEST(StorageDeviceTest, BlockNodeIsItsOwnDevice) {
  struct stat st = {};
  st.st_mode = S_IFBLK | 0660;
  st.st_dev = 5;      // devtmpfs, where the node lives
  st.st_rdev = 2049;  // the disk the node stands for
  EXPECT_EQ(StorageDeviceOf(st), 2049u);
}

TEST(StorageDeviceTest, FileIsOnItsFilesystemsDevice) {
  char path[] = "/tmp/fgds-storage-device-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(StorageDevice(fd), st.st_dev);
  close(fd);
}

TEST(StorageDeviceTest, BadDescriptorIsZeroWithErrno) {
  errno = 0;
  EXPECT_EQ(StorageDevice(-1), 0u);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
}  // namespace fgds::kmod
