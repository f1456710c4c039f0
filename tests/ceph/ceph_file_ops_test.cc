// The less common calls through a ceph mount: mknod, fallocate,
// lseek(SEEK_DATA/SEEK_HOLE), xattr flags, rename flags, links; each with
// CephFS's answer, or the errno the backend gives where CephFS has none
// (docs/ceph.md).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ceph/ceph_cluster.h"
#include "tests/lib/file_contents.h"

namespace fgds::testing {
namespace {

using CephFileOpsTest = CephTest;

TEST_F(CephFileOpsTest, MknodMakesFifosSocketsAndDevices) {
  const std::string fifo = dir_ + "/fifo", dev = dir_ + "/null",
                    sock = dir_ + "/sock";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0640), 0) << strerror(errno);
  ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0)
      << strerror(errno);
  ASSERT_EQ(mknod(sock.c_str(), S_IFSOCK | 0600, 0), 0) << strerror(errno);
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  ASSERT_EQ(lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(mkfifo(fifo.c_str(), 0640), -1);
  EXPECT_EQ(errno, EEXIST);
}

TEST_F(CephFileOpsTest, FallocateAndPunchHole) {
  const std::string path = dir_ + "/f";
  int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  // Plain allocation extends the size.
  ASSERT_EQ(fallocate(fd, 0, 0, 3 << 20), 0) << strerror(errno);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 3 << 20);
  std::vector<char> data(3 << 20, 'x');
  ASSERT_EQ(pwrite(fd, data.data(), data.size(), 0),
            static_cast<ssize_t>(data.size()));
  // A hole across the object's middle reads back as zeros, size kept.
  ASSERT_EQ(
      fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 1 << 20),
      0)
      << strerror(errno);
  close(fd);
  std::string got = ReadAll(path);
  ASSERT_EQ(got.size(), 3u << 20);
  EXPECT_EQ(got.substr(0, 4096), std::string(4096, 'x'));
  EXPECT_EQ(got.substr(4096, 1 << 20), std::string(1 << 20, '\0'));
  EXPECT_EQ(got.substr(4096 + (1 << 20)), std::string((2 << 20) - 4096, 'x'));
  // What CephFS does not do: its EOPNOTSUPP.
  fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 1 << 20), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  close(fd);
}

TEST_F(CephFileOpsTest, SeekDataAndHole) {
  const std::string path = dir_ + "/f";
  int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "end", 3, (5 << 20) - 3), 3);
  // CephFS reports no holes: all of the file is data, the hole is at its
  // end (what lseek(2) allows a file system that does not track them).
  EXPECT_EQ(lseek(fd, 0, SEEK_DATA), 0);
  EXPECT_EQ(lseek(fd, 1000, SEEK_DATA), 1000);
  EXPECT_EQ(lseek(fd, 0, SEEK_HOLE), 5 << 20);
  EXPECT_EQ(lseek(fd, 5 << 20, SEEK_DATA), -1);
  EXPECT_EQ(errno, ENXIO);
  EXPECT_EQ(lseek(fd, 6 << 20, SEEK_HOLE), -1);
  EXPECT_EQ(errno, ENXIO);
  EXPECT_EQ(lseek(fd, 0, SEEK_END), 5 << 20);
  close(fd);
}

TEST_F(CephFileOpsTest, XattrFlagsSizesAndCephAttributes) {
  const std::string f = dir_ + "/f";
  int fd = open(f.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(setxattr(f.c_str(), "user.a", "1", 1, XATTR_CREATE), 0);
  EXPECT_EQ(setxattr(f.c_str(), "user.a", "2", 1, XATTR_CREATE), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(setxattr(f.c_str(), "user.none", "2", 1, XATTR_REPLACE), -1);
  EXPECT_EQ(errno, ENODATA);
  ASSERT_EQ(setxattr(f.c_str(), "user.a", "22", 2, XATTR_REPLACE), 0);
  char small[1];
  EXPECT_EQ(getxattr(f.c_str(), "user.a", small, sizeof(small)), -1);
  EXPECT_EQ(errno, ERANGE);
  EXPECT_EQ(getxattr(f.c_str(), "user.a", nullptr, 0), 2);
  EXPECT_EQ(removexattr(f.c_str(), "user.none"), -1);
  EXPECT_EQ(errno, ENODATA);
  // Ceph's virtual attributes come through: the file's layout.
  char layout[256] = {};
  ASSERT_GT(getxattr(f.c_str(), "ceph.file.layout.object_size", layout,
                     sizeof(layout) - 1),
            0)
      << strerror(errno);
  EXPECT_STREQ(layout, "4194304");
}

TEST_F(CephFileOpsTest, RenameFlagsSymlinksAndHardLinks) {
  const std::string a = dir_ + "/a", b = dir_ + "/b", c = dir_ + "/c";
  int fd = open(a.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "A", 1), 1);
  close(fd);
  fd = open(b.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "B", 1), 1);
  close(fd);
  // libcephfs 16 has no rename flags: renameat2's "not supported here".
  EXPECT_EQ(
      renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(
      renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, c.c_str(), RENAME_NOREPLACE),
      -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(
      renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, c.c_str(), RENAME_WHITEOUT), -1);
  EXPECT_EQ(ReadAll(a), "A");
  EXPECT_EQ(ReadAll(b), "B");
  // A plain rename over an existing file replaces it.
  ASSERT_EQ(rename(a.c_str(), b.c_str()), 0);
  EXPECT_EQ(ReadAll(b), "A");

  // Symlinks: dangling, long targets, and through the link.
  std::string target;
  while (target.size() < 1000) target += "d/";
  target += "x";
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/long").c_str()), 0);
  char buf[2048] = {};
  EXPECT_EQ(readlink((dir_ + "/long").c_str(), buf, sizeof(buf)),
            static_cast<ssize_t>(target.size()));
  EXPECT_EQ(std::string(buf), target);
  EXPECT_EQ(open((dir_ + "/long").c_str(), O_RDONLY), -1);
  EXPECT_EQ(errno, ENOENT);
  // Hard links: across directories, nlink counts, unlinking one keeps data.
  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(link(b.c_str(), (dir_ + "/sub/b2").c_str()), 0) << strerror(errno);
  struct stat st;
  ASSERT_EQ(stat(b.c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  ASSERT_EQ(unlink(b.c_str()), 0);
  EXPECT_EQ(ReadAll(dir_ + "/sub/b2"), "A");
  ASSERT_EQ(stat((dir_ + "/sub/b2").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(link((dir_ + "/sub/b2").c_str(), (dir_ + "/sub/b2").c_str()), -1);
  EXPECT_EQ(errno, EEXIST);
}

}  // namespace
}  // namespace fgds::testing
