// Metadata at a fraction of native (issue 16): what the kernel may cache
// and how many requests each namespace operation costs, counted in the
// daemon's own /.fgds/stats. And the two renameat2/open flags overlayfs
// wants of an upper filesystem: RENAME_WHITEOUT and O_TMPFILE.
//
// --cache strict must show a change made in the backing directory behind
// the mount's back at once; the default mode within its timeouts.
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Request counts per operation, from the mount's /.fgds/stats, as one
// reading gives them.
std::map<std::string, long> ReadOpCounts(const std::string& mnt) {
  std::ifstream in(mnt + "/.fgds/stats");
  std::map<std::string, long> counts;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string op;
    long count;
    if (fields >> op >> count) counts[op] = count;
  }
  return counts;
}

// The counts once every request answered so far is in them: the daemon
// counts a request just after its reply, so a reading right after the
// caller's last call may miss it. Settled: two readings 20 ms apart agree
// (bar the stats file's own open and read).
std::map<std::string, long> OpCounts(const std::string& mnt) {
  auto counts = ReadOpCounts(mnt);
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto again = ReadOpCounts(mnt);
    again["open"] = counts["open"];
    again["read"] = counts["read"];
    again["release"] = counts["release"];
    if (again == counts) break;
    counts = ReadOpCounts(mnt);
  }
  return counts;
}

// Requests that reading /.fgds/stats itself may cost (its lookups and
// attributes), counted in the next reading.
constexpr long kStatsReadSlack = 3;

// How many more `op` requests `after` counts than `before`.
long Delta(const std::map<std::string, long>& before,
           const std::map<std::string, long>& after, const std::string& op) {
  auto a = after.find(op);
  auto b = before.find(op);
  return (a == after.end() ? 0 : a->second) -
         (b == before.end() ? 0 : b->second);
}

void WriteFile(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << strerror(errno);
  ASSERT_EQ(write(fd, data.data(), data.size()),
            static_cast<ssize_t>(data.size()));
  ASSERT_EQ(close(fd), 0);
}

class MetadataCacheTest : public ::testing::Test {
 protected:
  void Mount(std::vector<std::string> args) {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    MountOptions options;
    options.extra_args = std::move(args);
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    OpCounts(fs_->mountpoint());  // the control files' names, now cached
  }
  std::string M(const std::string& name) const {
    return fs_->mountpoint() + "/" + name;
  }
  std::string B(const std::string& name) const {
    return fs_->backing() + "/" + name;
  }
  std::unique_ptr<MountedFs> fs_;
};

TEST_F(MetadataCacheTest, StrictModeSeesOutsideChangesAtOnce) {
  Mount({"--cache", "strict"});
  if (fs_ == nullptr) return;
  struct stat st;
  // A name looked up and missing, then created outside.
  ASSERT_EQ(stat(M("f").c_str(), &st), -1);
  ASSERT_EQ(errno, ENOENT);
  ASSERT_NO_FATAL_FAILURE(WriteFile(B("f"), "abc"));
  ASSERT_EQ(stat(M("f").c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_size, 3);
  // Attributes changed outside.
  ASSERT_EQ(chmod(B("f").c_str(), 0600), 0);
  ASSERT_EQ(truncate(B("f").c_str(), 10), 0);
  ASSERT_EQ(stat(M("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 10);
  // Renamed and removed outside.
  ASSERT_EQ(rename(B("f").c_str(), B("g").c_str()), 0);
  EXPECT_EQ(stat(M("f").c_str(), &st), -1);
  ASSERT_EQ(stat(M("g").c_str(), &st), 0);
  ASSERT_EQ(unlink(B("g").c_str()), 0);
  EXPECT_EQ(stat(M("g").c_str(), &st), -1);
  EXPECT_EQ(errno, ENOENT);
}

// The default mode with short explicit timeouts: an outside change shows
// once the timeout has passed, and not before (the kernel did cache).
TEST_F(MetadataCacheTest, DefaultModeSeesOutsideChangesWithinTheTimeout) {
  constexpr double kTimeout = 2.0;
  const std::string t = absl::StrCat(kTimeout);
  Mount({"--cache", "default", "--attr-timeout", t, "--entry-timeout", t,
         "--negative-timeout", t});
  if (fs_ == nullptr) return;
  struct stat st;
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("f"), "abc"));
  ASSERT_EQ(stat(M("f").c_str(), &st), 0);
  ASSERT_EQ(stat(M("missing").c_str(), &st), -1);
  const Clock::time_point cached = Clock::now();
  ASSERT_EQ(chmod(B("f").c_str(), 0600), 0);
  ASSERT_NO_FATAL_FAILURE(WriteFile(B("missing"), "x"));
  struct stat f_st, missing_st;
  const int f_res = stat(M("f").c_str(), &f_st);
  const int missing_res = stat(M("missing").c_str(), &missing_st);
  if (std::chrono::duration<double>(Clock::now() - cached).count() <
      kTimeout * 0.8) {
    // Still inside the timeouts: the kernel answers from its cache.
    ASSERT_EQ(f_res, 0);
    EXPECT_EQ(f_st.st_mode & 07777, 0644u) << "attributes were not cached";
    EXPECT_EQ(missing_res, -1) << "the missing name was not remembered";
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(kTimeout + 0.5));
  ASSERT_EQ(stat(M("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(stat(M("missing").c_str(), &st), 0) << strerror(errno);
}

// The default timeouts of the local backend are long: an outside change
// right after a stat is not seen (this is what --cache strict is for).
TEST_F(MetadataCacheTest, DefaultModeOfTheLocalBackendCachesForLong) {
  Mount({});
  if (fs_ == nullptr) return;
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("f"), "abc"));
  struct stat st;
  ASSERT_EQ(stat(M("f").c_str(), &st), 0);
  ASSERT_EQ(chmod(B("f").c_str(), 0600), 0);
  // Seconds later still cached (the default is 10 minutes).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto before = OpCounts(fs_->mountpoint());
  ASSERT_EQ(stat(M("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_LE(Delta(before, OpCounts(fs_->mountpoint()), "getattr"),
            kStatsReadSlack);
}

// A missing name costs one lookup, then none while it is remembered.
TEST_F(MetadataCacheTest, MissingNamesAreRemembered) {
  Mount({});
  if (fs_ == nullptr) return;
  struct stat st;
  const auto before = OpCounts(fs_->mountpoint());
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(stat(M("nothing").c_str(), &st), -1);
    ASSERT_EQ(errno, ENOENT);
  }
  EXPECT_LE(Delta(before, OpCounts(fs_->mountpoint()), "lookup"),
            1 + kStatsReadSlack);
  // Creating the name through the mount replaces the negative entry.
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("nothing"), "now"));
  ASSERT_EQ(stat(M("nothing").c_str(), &st), 0) << strerror(errno);
  EXPECT_EQ(st.st_size, 3);
}

// What creating, stating and removing files costs in requests: a create is
// a lookup (the name is new to the kernel) and a create, and the close
// sends no FLUSH on a local backing filesystem; a stat right after costs
// nothing.
TEST_F(MetadataCacheTest, CreateStatUnlinkRoundTrips) {
  Mount({});
  if (fs_ == nullptr) return;
  ASSERT_EQ(mkdir(M("d").c_str(), 0755), 0);
  constexpr int kFiles = 200;
  const auto before = OpCounts(fs_->mountpoint());
  for (int i = 0; i < kFiles; ++i) {
    const std::string path = M("d/f" + std::to_string(i));
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(close(fd), 0);
  }
  const auto created = OpCounts(fs_->mountpoint());
  EXPECT_EQ(Delta(before, created, "create"), kFiles);
  EXPECT_LE(Delta(before, created, "lookup"), kFiles + kStatsReadSlack);
  EXPECT_EQ(Delta(before, created, "flush"), 0);
  for (int i = 0; i < kFiles; ++i) {
    struct stat st;
    ASSERT_EQ(lstat(M("d/f" + std::to_string(i)).c_str(), &st), 0);
  }
  const auto stated = OpCounts(fs_->mountpoint());
  EXPECT_LE(Delta(created, stated, "lookup"), kStatsReadSlack);
  EXPECT_LE(Delta(created, stated, "getattr"), kStatsReadSlack);
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(unlink(M("d/f" + std::to_string(i)).c_str()), 0);
  }
  const auto removed = OpCounts(fs_->mountpoint());
  EXPECT_EQ(Delta(stated, removed, "unlink"), kFiles);
  EXPECT_LE(Delta(stated, removed, "lookup"), kStatsReadSlack);
}

// `ls -l` asks for a security label and an ACL per file. The label is
// answered "not supported" (ls then stops asking for the mount), the ACL is
// cached by the kernel, and a second listing of known files refreshes
// nothing: it costs no getxattr and no lookup.
TEST_F(MetadataCacheTest, RepeatedLongListingAsksNothingPerFile) {
  if (access("/bin/ls", X_OK) != 0) GTEST_SKIP() << "no /bin/ls";
  Mount({});
  if (fs_ == nullptr) return;
  ASSERT_EQ(mkdir(M("d").c_str(), 0755), 0);
  constexpr int kFiles = 300;
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_NO_FATAL_FAILURE(WriteFile(M("d/f" + std::to_string(i)), "x"));
  }
  // What the label question gets.
  EXPECT_EQ(lgetxattr(M("d/f0").c_str(), "security.selinux", nullptr, 0), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  // A label that exists is returned (root may set one without SELinux).
  ASSERT_EQ(lsetxattr(M("d/f1").c_str(), "security.selinux", "lbl", 4, 0), 0)
      << strerror(errno);
  char label[16] = {};
  EXPECT_EQ(
      lgetxattr(M("d/f1").c_str(), "security.selinux", label, sizeof(label)),
      4);
  EXPECT_STREQ(label, "lbl");
  ASSERT_EQ(lremovexattr(M("d/f1").c_str(), "security.selinux"), 0);
  // User xattrs are untouched by all this.
  ASSERT_EQ(setxattr(M("d/f2").c_str(), "user.k", "v", 1, 0), 0);
  EXPECT_EQ(getxattr(M("d/f2").c_str(), "user.k", nullptr, 0), 1);
  EXPECT_EQ(getxattr(M("d/f2").c_str(), "user.none", nullptr, 0), -1);
  EXPECT_EQ(errno, ENODATA);

  const std::string ls = "/bin/ls -l " + M("d") + " > /dev/null";
  ASSERT_EQ(system(ls.c_str()), 0);
  const auto first = OpCounts(fs_->mountpoint());
  ASSERT_EQ(system(ls.c_str()), 0);
  const auto second = OpCounts(fs_->mountpoint());
  // A handful, not one per file: the label question once per listing.
  EXPECT_LE(Delta(first, second, "getxattr"), 1 + kStatsReadSlack);
  EXPECT_LE(Delta(first, second, "lookup"), kStatsReadSlack);
  EXPECT_LE(Delta(first, second, "getattr"), kStatsReadSlack);
}

// In strict mode a listing asks for each entry (nothing is cached) but
// still lists everything with the right types.
TEST_F(MetadataCacheTest, StrictModeListsWithoutReaddirplus) {
  Mount({"--cache", "strict"});
  if (fs_ == nullptr) return;
  ASSERT_EQ(mkdir(M("d").c_str(), 0755), 0);
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("d/file"), "x"));
  ASSERT_EQ(mkdir(M("d/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink("file", M("d/link").c_str()), 0);
  const auto before = OpCounts(fs_->mountpoint());
  const std::string ls = "/bin/ls -l " + M("d") + " > /dev/null";
  ASSERT_EQ(system(ls.c_str()), 0);
  const auto after = OpCounts(fs_->mountpoint());
  EXPECT_EQ(Delta(before, after, "readdirplus"), 0);
  EXPECT_GE(Delta(before, after, "readdir"), 1);
}

TEST_F(MetadataCacheTest, RenameWhiteoutLeavesAWhiteout) {
  Mount({});
  if (fs_ == nullptr) return;
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("a"), "content"));
  ASSERT_EQ(renameat2(AT_FDCWD, M("a").c_str(), AT_FDCWD, M("b").c_str(),
                      RENAME_WHITEOUT),
            0)
      << strerror(errno);
  struct stat st;
  // The old name is a whiteout: a character device 0:0, on the mount and
  // in the backing directory.
  for (const std::string& path : {M("a"), B("a")}) {
    ASSERT_EQ(lstat(path.c_str(), &st), 0) << path;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << path;
    EXPECT_EQ(st.st_rdev, makedev(0, 0)) << path;
  }
  ASSERT_EQ(lstat(M("b").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 7);
  // Unknown flags are still refused.
  EXPECT_EQ(
      renameat2(AT_FDCWD, M("b").c_str(), AT_FDCWD, M("c").c_str(), 1u << 20),
      -1);
  EXPECT_EQ(errno, EINVAL);
}

// O_TMPFILE, then linkat into the namespace. libfuse grew the operation in
// 3.15: built against an older one the daemon cannot receive it, and the
// kernel says EOPNOTSUPP.
TEST_F(MetadataCacheTest, TmpfileThenLinkat) {
  Mount({});
  if (fs_ == nullptr) return;
  int fd = open(fs_->mountpoint().c_str(), O_TMPFILE | O_RDWR, 0640);
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 15)
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "tmp", 3), 3);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ASSERT_EQ(linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, M("named").c_str(),
                   AT_SYMLINK_FOLLOW),
            0)
      << strerror(errno);
  ASSERT_EQ(close(fd), 0);
  std::ifstream in(B("named"));
  std::string content((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "tmp");
  // O_EXCL: never linkable.
  fd = open(fs_->mountpoint().c_str(), O_TMPFILE | O_RDWR | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(linkat(AT_FDCWD, ("/proc/self/fd/" + std::to_string(fd)).c_str(),
                   AT_FDCWD, M("never").c_str(), AT_SYMLINK_FOLLOW),
            -1);
  close(fd);
#else
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EOPNOTSUPP);
  if (fd >= 0) close(fd);
#endif
}

// overlayfs with its upper, lower and work directories on the mount (as
// root): removing a lower file leaves a whiteout in upper, a rename copies
// up, and the merged view shows both.
TEST_F(MetadataCacheTest, OverlayfsOnTheMount) {
  Mount({});
  if (fs_ == nullptr) return;
  for (const char* d : {"lower", "upper", "work", "merged"}) {
    ASSERT_EQ(mkdir(M(d).c_str(), 0755), 0);
  }
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("lower/gone"), "1"));
  ASSERT_NO_FATAL_FAILURE(WriteFile(M("lower/moved"), "22"));
  const std::string data = "lowerdir=" + M("lower") +
                           ",upperdir=" + M("upper") + ",workdir=" + M("work");
  if (mount("overlay", M("merged").c_str(), "overlay", 0, data.c_str()) != 0) {
    GTEST_SKIP() << "overlayfs: " << strerror(errno);
  }
  const std::string merged = M("merged");
  EXPECT_EQ(unlink((merged + "/gone").c_str()), 0) << strerror(errno);
  EXPECT_EQ(rename((merged + "/moved").c_str(), (merged + "/new").c_str()), 0)
      << strerror(errno);
  struct stat st;
  EXPECT_EQ(lstat((merged + "/gone").c_str(), &st), -1);
  EXPECT_EQ(lstat((merged + "/moved").c_str(), &st), -1);
  EXPECT_EQ(lstat((merged + "/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2);
  ASSERT_EQ(umount(merged.c_str()), 0) << strerror(errno);
  // The upper directory holds whiteouts for both lower names.
  for (const char* name : {"upper/gone", "upper/moved"}) {
    ASSERT_EQ(lstat(M(name).c_str(), &st), 0) << name;
    EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) << name;
  }
  EXPECT_EQ(lstat(M("upper/new").c_str(), &st), 0);
}

}  // namespace
}  // namespace fgds::testing
