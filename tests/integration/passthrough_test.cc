// FUSE passthrough (fusefs/passthrough.h): where the mount has it, regular
// files' reads, writes and mappings go from the kernel to the backing file
// and never reach the daemon (its /.fgds/stats counts no read or write);
// without it (--passthrough off, the "nopt." run) the daemon moves every
// byte. Set-id bits: files that have them are served by the daemon, and a
// file that gains them while open in passthrough still loses them on an
// unprivileged write (real users, test_users.h). Opens of one file always
// agree on the mode, as the kernel demands (else ETXTBSY).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/usrbio_harness.h"
#include "tests/lib/mount_features.h"

namespace fgds::testing {
namespace {

// count and bytes of `op` in the FUSE table of /.fgds/stats.
struct OpRow {
  uint64_t count = 0;
  uint64_t bytes = 0;
};
OpRow FuseOp(const std::string& mountpoint, const std::string& op) {
  std::ifstream in(mountpoint + "/.fgds/stats");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    uint64_t errors;
    OpRow row;
    if (words >> first && first == op &&
        words >> row.count >> errors >> row.bytes) {
      return row;  // the FUSE table comes first
    }
  }
  return {};
}

bool RunsWithoutPassthrough() {
  const char* env = getenv("FGDS_TEST_MOUNT_ARGS");
  return env != nullptr && std::strstr(env, "--passthrough off") != nullptr;
}

// Linux 6.9 or later (FUSE passthrough).
bool KernelHasPassthrough() {
  utsname u;
  if (uname(&u) != 0) return false;
  int major = 0, minor = 0;
  if (sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 9);
}

class PassthroughTest : public UsrbioTwoUsersTest {
 protected:
  mode_t BackingMode(const std::string& name) const {
    struct stat st;
    if (stat(Backing("shared/" + name).c_str(), &st) != 0) return 0;
    return st.st_mode & 07777;
  }
};

// Where the libfuse the daemon was built with and the kernel both have it,
// the default mount uses passthrough: a silent fallback would pass every
// other test here and lose the speed.
TEST_F(PassthroughTest, OnByDefaultWhereAvailable) {
  const std::string features = MountFeatures(fs_->mountpoint());
  ASSERT_FALSE(features.empty());
  if (RunsWithoutPassthrough()) {
    EXPECT_NE(features.find("passthrough off: --passthrough off"),
              std::string::npos)
        << features;
    return;
  }
  if (features.find("built with 3.1") != std::string::npos &&
      features.find("built with 3.14") == std::string::npos &&
      KernelHasPassthrough()) {
    EXPECT_NE(features.find("passthrough on"), std::string::npos) << features;
  } else {
    GTEST_SKIP() << "no passthrough here: " << features;
  }
}

// Reads, writes, mmap and fsync of a regular file: right data both ways;
// the daemon sees none of the data in passthrough and all of it without.
TEST_F(PassthroughTest, DataReachesDaemonOnlyWithoutPassthrough) {
  const bool passthrough = PassthroughOn(fs_->mountpoint());
  const std::string path = Mnt("data");
  constexpr size_t kSize = 4 << 20;
  std::vector<char> data(kSize);
  FillPattern(data.data(), kSize, 7, 0);
  const OpRow write_before = FuseOp(fs_->mountpoint(), "write");
  const OpRow read_before = FuseOp(fs_->mountpoint(), "read");

  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(pwrite(fd, data.data(), kSize, 0), static_cast<ssize_t>(kSize));
  ASSERT_EQ(fsync(fd), 0);
  // A shared mapping writes one page; the kernel writes it back on msync.
  void* map = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED) << strerror(errno);
  std::memset(static_cast<char*>(map) + 8192, 'M', 4096);
  std::memset(data.data() + 8192, 'M', 4096);
  ASSERT_EQ(msync(map, kSize, MS_SYNC), 0);
  ASSERT_EQ(munmap(map, kSize), 0);
  ASSERT_EQ(close(fd), 0);

  // The backing file holds exactly what was written.
  std::vector<char> got(kSize);
  int bfd = open(Backing("data").c_str(), O_RDONLY);
  ASSERT_GE(bfd, 0);
  ASSERT_EQ(pread(bfd, got.data(), kSize, 0), static_cast<ssize_t>(kSize));
  close(bfd);
  EXPECT_EQ(std::memcmp(got.data(), data.data(), kSize), 0);
  // And so does the mount, read after a change made behind its back.
  bfd = open(Backing("data").c_str(), O_WRONLY);
  ASSERT_EQ(pwrite(bfd, "behind", 6, 100), 6);
  close(bfd);
  std::memcpy(data.data() + 100, "behind", 6);
  fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::fill(got.begin(), got.end(), 0);
  ASSERT_EQ(pread(fd, got.data(), kSize, 0), static_cast<ssize_t>(kSize));
  close(fd);
  if (passthrough) {
    // In passthrough there is one page cache, the backing file's.
    EXPECT_EQ(std::memcmp(got.data(), data.data(), kSize), 0);
  }

  const OpRow write_after = FuseOp(fs_->mountpoint(), "write");
  const OpRow read_after = FuseOp(fs_->mountpoint(), "read");
  if (passthrough) {
    // Small writes: no round trip each (FUSE_HANDLE_KILLPRIV_V2 spares the
    // kernel's getxattr("security.capability") before every write).
    const OpRow getxattr_before = FuseOp(fs_->mountpoint(), "getxattr");
    fd = open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 256; ++i) {
      ASSERT_EQ(pwrite(fd, data.data() + i * 4096, 4096, i * 4096), 4096);
    }
    close(fd);
    EXPECT_LT(
        FuseOp(fs_->mountpoint(), "getxattr").count - getxattr_before.count,
        8u);
    EXPECT_EQ(write_after.count, write_before.count);
    EXPECT_EQ(read_after.bytes, read_before.bytes);
    EXPECT_GE(MountCounter(fs_->mountpoint(), "passthrough_opens"), 2u);
  } else {
    EXPECT_GE(write_after.bytes - write_before.bytes, kSize);
    EXPECT_GT(read_after.bytes, read_before.bytes);
    EXPECT_EQ(MountCounter(fs_->mountpoint(), "passthrough_opens"), 0u);
  }
}

// A file with a set-uid bit is served by the daemon (which clears the bit
// on bob's write and would keep it on root's), whatever the mode.
TEST_F(PassthroughTest, SetIdFileServedByDaemon) {
  const std::string path = Shared("suid");
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fchown(fd, alice_.uid, alice_.gid), 0);
  ASSERT_EQ(fchmod(fd, 04777), 0);
  close(fd);
  const uint64_t daemon_opens = MountCounter(fs_->mountpoint(), "daemon_opens");
  EXPECT_EQ(RunAsUser(bob_,
                      [&] {
                        int f = open(path.c_str(), O_WRONLY);
                        if (f < 0) return 1;
                        if (pwrite(f, "bob", 3, 0) != 3) return 2;
                        return close(f) == 0 ? 0 : 3;
                      }),
            0);
  EXPECT_EQ(BackingMode("suid") & 06000, 0u);
  if (PassthroughOn(fs_->mountpoint())) {
    EXPECT_EQ(MountCounter(fs_->mountpoint(), "daemon_opens"),
              daemon_opens + 1);
  }
}

// bob truncates alice's set-uid file, by O_TRUNC and by ftruncate: the
// bits go, as on a local file system (the kernel leaves it to the daemon
// with FUSE_HANDLE_KILLPRIV_V2).
TEST_F(PassthroughTest, UnprivilegedTruncateClearsSetId) {
  for (const bool by_open : {true, false}) {
    const std::string name = by_open ? "trunc-open" : "trunc-ftruncate";
    const std::string path = Shared(name);
    int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "0123456789", 10), 10);
    ASSERT_EQ(fchown(fd, alice_.uid, alice_.gid), 0);
    ASSERT_EQ(fchmod(fd, 06777), 0);
    close(fd);
    EXPECT_EQ(RunAsUser(bob_,
                        [&] {
                          int f = by_open
                                      ? open(path.c_str(), O_WRONLY | O_TRUNC)
                                      : open(path.c_str(), O_WRONLY);
                          if (f < 0) return 1;
                          if (!by_open && ftruncate(f, 3) != 0) return 2;
                          return close(f) == 0 ? 0 : 3;
                        }),
              0)
        << name;
    EXPECT_EQ(BackingMode(name) & 06000, 0u) << name;
  }
}

// chmod u+s while bob holds the file open (in passthrough, as it had no
// set-id bit then): bob's next write, which the kernel makes straight to
// the backing file, must still clear the bit; and a second open of the
// file, now set-uid, must follow the open one's mode (the kernel refuses a
// mix with ETXTBSY).
TEST_F(PassthroughTest, ChmodWhileOpenStillClearsSetId) {
  const std::string path = Shared("late");
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fchown(fd, alice_.uid, alice_.gid), 0);
  ASSERT_EQ(fchmod(fd, 0777), 0);
  close(fd);
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // bob: open, report, wait for the chmod, open again, write, close.
    if (BecomeUser(bob_) != 0) _exit(126);
    int f = open(path.c_str(), O_WRONLY);
    char c = f >= 0 ? 'o' : 'e';
    if (write(to_parent[1], &c, 1) != 1 || f < 0) _exit(1);
    if (read(to_child[0], &c, 1) != 1) _exit(2);
    // Opened while set-uid, with a passthrough file of it open.
    int g = open(path.c_str(), O_RDONLY);
    if (g < 0) _exit(errno == ETXTBSY ? 4 : 5);
    if (pwrite(f, "bob!", 4, 0) != 4) _exit(3);
    char back[4];
    if (pread(g, back, 4, 0) != 4 || std::memcmp(back, "bob!", 4) != 0) {
      _exit(7);
    }
    close(g);
    _exit(close(f) == 0 ? 0 : 6);
  }
  char c = 0;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  ASSERT_EQ(c, 'o');
  // alice, the owner, sets the bits (root would do the same).
  EXPECT_EQ(RunAsUser(alice_, [&] { return chmod(path.c_str(), 06777); }), 0);
  ASSERT_EQ(BackingMode("late") & 06000, 06000u);
  ASSERT_EQ(write(to_child[1], "w", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(BackingMode("late") & 06000, 0u);
  for (int p : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) {
    close(p);
  }
}

// The other way round: open while set-uid (served by the daemon), bits
// removed meanwhile; a new open follows the open file's mode.
TEST_F(PassthroughTest, OpensOfOneFileAgree) {
  const std::string path = Mnt("mixed");
  const uint64_t releases = MountCounter(fs_->mountpoint(), "release");
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 04755);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fchmod(fd, 04755), 0);
  close(fd);
  fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  int second = open(path.c_str(), O_RDWR);
  EXPECT_GE(second, 0) << strerror(errno);
  EXPECT_EQ(pwrite(second, "x", 1, 0), 1);
  char c = 0;
  EXPECT_EQ(pread(fd, &c, 1, 0), 1);
  EXPECT_EQ(c, 'x');
  if (second >= 0) close(second);
  close(fd);
  // The kernel sends RELEASE after close returns: wait until the daemon
  // has seen all three, or the next open may still find one open.
  for (int i = 0; i < 1000 && MountCounter(fs_->mountpoint(), "release") <
                                  releases + (second >= 0 ? 3 : 2);
       ++i) {
    usleep(10000);
  }
  // With every file closed, the next open chooses afresh: passthrough.
  const uint64_t opens = MountCounter(fs_->mountpoint(), "passthrough_opens");
  fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  close(fd);
  if (PassthroughOn(fs_->mountpoint())) {
    EXPECT_EQ(MountCounter(fs_->mountpoint(), "passthrough_opens"), opens + 1);
  }
}

}  // namespace
}  // namespace fgds::testing
