// POSIX semantics of the mounted filesystem, proven by comparison: every
// scenario (tests/lib/posix_scenarios.h) runs the same steps on the FUSE
// mount and on a plain local directory, and the two traces must be equal.
// Each scenario also checks absolute expectations on both sides, so the
// local run validates the scenario itself and two equally wrong
// implementations cannot pass. What exists only on the mount (the hidden
// control directory, EXDEV to another filesystem, statfs) is tested at the
// end without a local twin.
//
// Every scenario runs once per mount mode (default, --writeback-cache,
// --direct-io). Test names are Scenarios/...MountMatchesLocal/<Mode>_<Name>.
// FGDS_POSIX_TRACE=1 prints each compared trace, also when it passes.
//
// Over ceph (FGDS_TEST_BACKEND=ceph, tests/lib/mounted_fs.h) the same
// scenarios run on a CephFS directory. Where CephFS itself answers
// differently from a local file system, posix_semantics_ceph.h states the
// exact difference (the mount's failed expectations and the trace lines
// that differ), and the test requires exactly that: any other difference,
// or the stated one going away, fails. FGDS_POSIX_CEPH_DUMP=1 prints what
// a scenario showed, in that table's form.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/posix_semantics_ceph.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/posix_scenarios.h"
#include "tests/lib/posix_trace.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

// Daemon configurations: each sends the kernel down different cache paths
// (page cache, writeback cache, no cache), and each must be POSIX.
struct MountMode {
  const char* name;
  const char* flag;  // extra `fgds mount` argument, or nullptr
};
void PrintTo(const MountMode& m, std::ostream* os) { *os << m.name; }
constexpr MountMode kModes[] = {
    {"Default", nullptr},
    {"WritebackCache", "--writeback-cache"},
    {"DirectIo", "--direct-io"},
};

// One mount per mode and one local directory, shared by all scenarios;
// each scenario works in its own subdirectory of both.
class PosixSemanticsTest
    : public ::testing::TestWithParam<std::tuple<MountMode, Scenario>> {
 protected:
  static void SetUpTestSuite() {
    mounts_ = new std::map<std::string, std::unique_ptr<MountedFs>>();
    auto local = MakeTempDir("fgds-posix-local.");
    if (local.ok()) local_root_ = new std::string(*local);
  }

  static void TearDownTestSuite() {
    delete mounts_;
    mounts_ = nullptr;
    if (local_root_ != nullptr) RemoveTree(*local_root_);
    delete local_root_;
    local_root_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(local_root_, nullptr);
    const MountMode& mode = std::get<0>(GetParam());
    std::unique_ptr<MountedFs>& fs = (*mounts_)[mode.name];
    // A scenario that crashed the daemon must not fail all the others.
    if (fs != nullptr && !IsFuseMount(fs->mountpoint())) {
      ADD_FAILURE() << "the " << mode.name << " mount was dead before this "
                    << "scenario (an earlier one crashed the daemon)";
      fs.reset();
    }
    if (fs == nullptr) {
      MountOptions options;
      if (mode.flag != nullptr) options.extra_args.push_back(mode.flag);
      auto started = MountedFs::Start(options);
      if (absl::IsFailedPrecondition(started.status())) {
        GTEST_SKIP() << started.status();
      }
      ASSERT_TRUE(started.ok()) << started.status();
      fs = std::move(*started);
    }
    mnt_ = fs->mountpoint();
  }

  std::string mnt_;
  static std::map<std::string, std::unique_ptr<MountedFs>>* mounts_;
  static std::string* local_root_;
};

std::map<std::string, std::unique_ptr<MountedFs>>* PosixSemanticsTest::mounts_ =
    nullptr;
std::string* PosixSemanticsTest::local_root_ = nullptr;

TEST_P(PosixSemanticsTest, MountMatchesLocal) {
  const Scenario& s = std::get<1>(GetParam());
  if (std::string(std::get<0>(GetParam()).name) == "DirectIo" &&
      std::string(s.name) == "Mmap") {
    // Documented in docs/fgdsd.md: with --direct-io the kernel refuses
    // shared writable mappings (libfuse 3.14 cannot ask for
    // FUSE_DIRECT_IO_ALLOW_MMAP). PosixMountOnlyTest checks that refusal.
    GTEST_SKIP() << "shared writable mmap is unsupported with --direct-io";
  }
  std::unique_ptr<Trace> on_mount = RunScenario(s, mnt_);
  std::unique_ptr<Trace> on_local = RunScenario(s, *local_root_);

  // One failure message per scenario, with the diff printed once.
  std::string problems;
  if (!on_local->failures().empty()) {
    absl::StrAppend(&problems,
                    "the LOCAL filesystem broke absolute expectations (the "
                    "scenario or the host is wrong):\n  ",
                    absl::StrJoin(on_local->failures(), "\n  "), "\n");
  }
  const CephDifference* known =
      TestingCeph() ? FindCephDifference(std::get<0>(GetParam()).name, s.name)
                    : nullptr;
  if (TestingCeph()) {
    // The difference CephFS shows, compared whole with the stated one.
    std::vector<std::string> diff;
    for (absl::string_view line : absl::StrSplit(
             DiffTraces(*on_mount, "mount", *on_local, "local"), '\n')) {
      if (absl::StartsWith(line, "  - ") || absl::StartsWith(line, "  + ")) {
        diff.emplace_back(line.substr(2));
      }
    }
    absl::StatusOr<TestUser> bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    auto normalized = [&](const std::vector<std::string>& lines) {
      return WithBobIds(WithoutFdNumbers(lines), bob->uid, bob->gid);
    };
    if (getenv("FGDS_POSIX_CEPH_DUMP") != nullptr) {
      std::cout << DumpCephDifference(
          std::get<0>(GetParam()).name, s.name,
          WithBobIds(on_mount->failures(), bob->uid, bob->gid),
          WithBobIds(diff, bob->uid, bob->gid));
    }
    if (known != nullptr && known->or_none && diff.empty() &&
        on_mount->failures().empty()) {
      known = nullptr;  // the lazy update landed first: plain comparison
    }
    if (known != nullptr) {
      EXPECT_EQ(normalized(on_mount->failures()),
                WithoutFdNumbers(known->mount_failures))
          << "scenario " << s.name << " over ceph: the mount's failed "
          << "expectations are not the ones posix_semantics_ceph.h states ("
          << known->why << ")";
      EXPECT_EQ(normalized(diff), WithoutFdNumbers(known->diff))
          << "scenario " << s.name << " over ceph: the trace differs from "
          << "the local one otherwise than posix_semantics_ceph.h states ("
          << known->why << "):\n"
          << DiffTraces(*on_mount, "mount", *on_local, "local");
    }
  }
  if (known == nullptr && !on_mount->failures().empty()) {
    absl::StrAppend(&problems, "the MOUNT broke absolute expectations:\n  ",
                    absl::StrJoin(on_mount->failures(), "\n  "), "\n");
  }
  if (known == nullptr && on_mount->lines() != on_local->lines()) {
    absl::StrAppend(&problems, "mount and local traces differ:\n",
                    DiffTraces(*on_mount, "mount", *on_local, "local"));
  }
  EXPECT_TRUE(problems.empty()) << "scenario " << s.name << ":\n" << problems;
  // FGDS_POSIX_TRACE=1 shows what was compared, also when it passed.
  if (getenv("FGDS_POSIX_TRACE") != nullptr) {
    std::cout << DiffTraces(*on_mount, "mount", *on_local, "local");
  }
  EXPECT_TRUE(IsFuseMount(mnt_)) << "the daemon died during " << s.name;

  RemoveTree(absl::StrCat(mnt_, "/", s.name));
  RemoveTree(absl::StrCat(*local_root_, "/", s.name));
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, PosixSemanticsTest,
    ::testing::Combine(::testing::ValuesIn(kModes),
                       ::testing::ValuesIn(AllPosixScenarios())),
    [](const ::testing::TestParamInfo<std::tuple<MountMode, Scenario>>& p) {
      return absl::StrCat(std::get<0>(p.param).name, "_",
                          std::get<1>(p.param).name);
    });

// Checks that have no local twin.
class PosixMountOnlyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fs = MountedFs::Start();
    if (absl::IsFailedPrecondition(fs.status())) GTEST_SKIP() << fs.status();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = std::move(*fs);
    mnt_ = fs_->mountpoint();
  }

  std::string M(const std::string& rel) const { return mnt_ + "/" + rel; }

  std::unique_ptr<MountedFs> fs_;
  std::string mnt_;
};

std::string Err() { return ErrnoName(errno); }

TEST_F(PosixMountOnlyTest, ControlDirIsHiddenButReachable) {
  ASSERT_EQ(mkdir(M("visible").c_str(), 0755), 0) << Err();
  // Not listed in the root...
  DIR* dir = opendir(mnt_.c_str());
  ASSERT_NE(dir, nullptr) << Err();
  std::vector<std::string> names;
  while (struct dirent* e = readdir(dir)) names.push_back(e->d_name);
  closedir(dir);
  EXPECT_EQ(std::count(names.begin(), names.end(), ".fgds"), 0)
      << "readdir(mount root) lists .fgds: " << absl::StrJoin(names, " ");
  EXPECT_EQ(std::count(names.begin(), names.end(), "visible"), 1)
      << absl::StrJoin(names, " ");
  // ... but reachable by name.
  struct stat st;
  ASSERT_EQ(stat(M(".fgds").c_str(), &st), 0) << Err();
  EXPECT_TRUE(S_ISDIR(st.st_mode)) << std::oct << st.st_mode;
  int fd = open(M(".fgds/stats").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << "open .fgds/stats: " << Err();
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  EXPECT_GT(n, 0) << ".fgds/stats read: " << (n < 0 ? Err() : "empty");
}

TEST_F(PosixMountOnlyTest, ControlDirCannotBeReplaced) {
  const std::string ctl = M(".fgds");
  ASSERT_EQ(mkdir(M("d").c_str(), 0755), 0) << Err();
  int fd = open(M("f").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0) << Err();
  ASSERT_EQ(write(fd, "f", 1), 1);
  close(fd);

  errno = 0;
  EXPECT_NE(mkdir(ctl.c_str(), 0755), 0) << "mkdir(.fgds) succeeded";
  fd = open(ctl.c_str(), O_CREAT | O_WRONLY, 0644);
  EXPECT_LT(fd, 0) << "open(.fgds, O_CREAT|O_WRONLY) succeeded";
  if (fd >= 0) close(fd);
  fd = open(ctl.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  EXPECT_LT(fd, 0) << "open(.fgds, O_CREAT|O_EXCL) succeeded";
  if (fd >= 0) close(fd);
  EXPECT_NE(mknod(ctl.c_str(), S_IFIFO | 0644, 0), 0)
      << "mknod(.fgds) succeeded";
  EXPECT_NE(symlink("f", ctl.c_str()), 0) << "symlink onto .fgds succeeded";
  EXPECT_NE(link(M("f").c_str(), ctl.c_str()), 0) << "link onto .fgds";
  EXPECT_NE(rename(M("f").c_str(), ctl.c_str()), 0)
      << "rename(file, .fgds) succeeded";
  EXPECT_NE(rename(M("d").c_str(), ctl.c_str()), 0)
      << "rename(dir, .fgds) succeeded";
  EXPECT_NE(renameat2(AT_FDCWD, M("d").c_str(), AT_FDCWD, ctl.c_str(),
                      RENAME_EXCHANGE),
            0)
      << "renameat2(dir, .fgds, RENAME_EXCHANGE) succeeded";
  EXPECT_NE(rename(ctl.c_str(), M("moved").c_str()), 0)
      << "rename(.fgds, moved) succeeded";
  EXPECT_NE(rmdir(ctl.c_str()), 0) << "rmdir(.fgds) succeeded";
  EXPECT_NE(unlink(ctl.c_str()), 0) << "unlink(.fgds) succeeded";

  // Everything is where it was.
  struct stat st;
  EXPECT_EQ(stat(ctl.c_str(), &st), 0) << Err();
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(lstat(M("f").c_str(), &st), 0) << "f was moved away: " << Err();
  EXPECT_EQ(lstat(M("d").c_str(), &st), 0) << "d was moved away: " << Err();
  EXPECT_NE(lstat(M("moved").c_str(), &st), 0);
  fd = open(M(".fgds/stats").c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << "stats gone after the attempts: " << Err();
  if (fd >= 0) close(fd);
}

TEST_F(PosixMountOnlyTest, CrossFilesystemIsExdev) {
  auto other = MakeTempDir("fgds-posix-other.");
  ASSERT_TRUE(other.ok()) << other.status();
  struct stat a, b;
  ASSERT_EQ(stat(mnt_.c_str(), &a), 0);
  ASSERT_EQ(stat(other->c_str(), &b), 0);
  ASSERT_NE(a.st_dev, b.st_dev) << "temp dir is on the mount's device";
  const std::string in = M("f"), out = *other + "/g";
  for (const std::string& p : {in, out}) {
    int fd = open(p.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0) << p << ": " << Err();
    close(fd);
  }
  const std::string out_new = *other + "/new", in_new = M("new");
  errno = 0;
  EXPECT_EQ(rename(in.c_str(), out_new.c_str()), -1);
  EXPECT_EQ(errno, EXDEV) << "rename mount->local: " << Err();
  errno = 0;
  EXPECT_EQ(rename(out.c_str(), in_new.c_str()), -1);
  EXPECT_EQ(errno, EXDEV) << "rename local->mount: " << Err();
  errno = 0;
  EXPECT_EQ(link(in.c_str(), out_new.c_str()), -1);
  EXPECT_EQ(errno, EXDEV) << "link mount->local: " << Err();
  errno = 0;
  EXPECT_EQ(link(out.c_str(), in_new.c_str()), -1);
  EXPECT_EQ(errno, EXDEV) << "link local->mount: " << Err();
  errno = 0;
  EXPECT_EQ(
      renameat2(AT_FDCWD, in.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE),
      -1);
  EXPECT_EQ(errno, EXDEV) << "RENAME_EXCHANGE across: " << Err();
  struct stat st;
  EXPECT_EQ(lstat(in.c_str(), &st), 0) << "source vanished: " << Err();
  RemoveTree(*other);
}

TEST_F(PosixMountOnlyTest, Statfs) {
  struct statfs sfs;
  ASSERT_EQ(statfs(mnt_.c_str(), &sfs), 0) << Err();
  EXPECT_GT(sfs.f_bsize, 0);
  ASSERT_EQ(mkdir(M("d").c_str(), 0755), 0) << Err();
  int fd = open(M("d").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0) << Err();
  EXPECT_EQ(fstatfs(fd, &sfs), 0) << Err();
  EXPECT_GT(sfs.f_bsize, 0);
  close(fd);
}

// With --direct-io the kernel refuses shared writable mappings; that
// documented limit must stay a clean ENODEV (never a crash or stale data),
// and read-only and private mappings keep working.
TEST(PosixDirectIoTest, SharedWritableMmapIsRefusedCleanly) {
  MountOptions options;
  options.extra_args.push_back("--direct-io");
  auto fs = MountedFs::Start(options);
  if (absl::IsFailedPrecondition(fs.status())) GTEST_SKIP() << fs.status();
  ASSERT_TRUE(fs.ok()) << fs.status();
  std::string path = (*fs)->mountpoint() + "/m";
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0) << Err();
  ASSERT_EQ(ftruncate(fd, 4096), 0) << Err();
  ASSERT_EQ(pwrite(fd, "abc", 3, 0), 3);
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_EQ(shared, MAP_FAILED);
  EXPECT_EQ(errno, ENODEV);
  void* priv = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(priv, MAP_FAILED) << Err();
  EXPECT_EQ(std::memcmp(priv, "abc", 3), 0);
  munmap(priv, 4096);
  close(fd);
}

}  // namespace
}  // namespace fgds::testing
