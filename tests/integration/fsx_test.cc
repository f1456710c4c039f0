// Randomized data-integrity runs (tests/lib/fsx.h) inside a real fgds mount,
// in the default, --writeback-cache and --direct-io modes, plus a run whose
// final files must equal those of the same seed on a local directory.
// The first tests check the checker: damage done behind its back on a local
// directory must be reported.
//
// Set FGDS_FSX_SEED to explore other seeds than the fixed CI ones.
#include "tests/lib/fsx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "tests/lib/fsx_model.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

// Totals over the cases this process ran, printed at exit.
std::atomic<uint64_t> g_total_ops{0};
std::atomic<uint64_t> g_total_mismatches{0};

class TotalsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    printf("fsx: %llu ops, %llu mismatches\n",
           static_cast<unsigned long long>(g_total_ops.load()),
           static_cast<unsigned long long>(g_total_mismatches.load()));
  }
};
::testing::Environment* const kTotalsPrinter =
    ::testing::AddGlobalTestEnvironment(new TotalsPrinter);

uint64_t Seed(uint64_t fixed) {
  uint64_t seed = 0;
  const char* env = getenv("FGDS_FSX_SEED");
  if (env != nullptr && absl::SimpleAtoi(env, &seed)) return seed;
  return fixed;
}

// A temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    auto dir = MakeTempDir("fgds-fsx");
    if (dir.ok()) path_ = *dir;
  }
  ~TempDir() {
    if (!path_.empty()) RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "" if a == b, else where they first differ (the files are megabytes: a
// plain EXPECT_EQ would print them whole).
std::string Difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "sizes " + std::to_string(a.size()) + " and " +
         std::to_string(b.size()) + ", first difference at " +
         std::to_string(i);
}

// Runs fsx, logs its summary and adds it to the process totals.
absl::Status RunFsx(Fsx& fsx) {
  absl::Status s = fsx.Run();
  printf("%s\n%s", fsx.stats().Summary().c_str(),
         fsx.stats().Details().c_str());
  g_total_ops += fsx.stats().ops;
  g_total_mismatches += fsx.stats().mismatches;
  return s;
}

// --- The checker catches damage (local directory, no mount needed). ---

enum class Damage { kFlipByte, kZeroBytes, kOldData, kShrink, kGrow };

struct DamageCase {
  const char* name;
  Damage damage;
  const char* want;  // in the report
};
void PrintTo(const DamageCase& c, std::ostream* os) { *os << c.name; }

class FsxDetectsTest : public ::testing::TestWithParam<DamageCase> {};

// Damages file 0 right after the last op, so that the final check, which
// reads every byte, must see it.
TEST_P(FsxDetectsTest, ReportsDamage) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  FsxOptions options;
  options.dir = dir.path();
  options.seed = 11;
  options.num_ops = 2000;
  options.max_file_size = 256 << 10;
  uint64_t damaged_at = 0;
  std::string setup_error;
  options.after_op = [&](uint64_t op) {
    if (op != options.num_ops) return;
    const std::string path = dir.path() + "/fsx.0";
    std::string data = ReadFile(path);
    // The first nonzero byte from the middle on: damage there must show.
    size_t at = data.size() / 2;
    while (at < data.size() && data[at] == 0) ++at;
    if (at + 16 > data.size()) {
      setup_error = "no data to damage";
      return;
    }
    damaged_at = at;
    int fd = open(path.c_str(), O_WRONLY);
    std::string bytes;
    switch (GetParam().damage) {
      case Damage::kFlipByte:
        bytes = std::string(1, static_cast<char>(~data[at]));
        break;
      case Damage::kZeroBytes:
        bytes = std::string(16, '\0');
        break;
      case Damage::kOldData:
        // What some op other than the current owner wrote at this offset.
        for (uint64_t old = 1; old < op; ++old) {
          bytes.resize(16);
          fsx::FillPattern(options.seed, old, at,
                           reinterpret_cast<uint8_t*>(bytes.data()), 16);
          if (bytes[0] != data[at]) break;
        }
        break;
      case Damage::kShrink:
        if (ftruncate(fd, data.size() - 1) != 0) setup_error = "ftruncate";
        break;
      case Damage::kGrow:
        if (ftruncate(fd, data.size() + 1) != 0) setup_error = "ftruncate";
        break;
    }
    if (!bytes.empty() && pwrite(fd, bytes.data(), bytes.size(), at) !=
                              static_cast<ssize_t>(bytes.size())) {
      setup_error = "pwrite";
    }
    close(fd);
  };
  Fsx fsx(options);
  absl::Status s = fsx.Run();
  ASSERT_EQ(setup_error, "");
  ASSERT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(fsx.stats().mismatches, 1u);
  const std::string report(s.message());
  EXPECT_NE(report.find(GetParam().want), std::string::npos) << report;
  if (GetParam().damage != Damage::kShrink &&
      GetParam().damage != Damage::kGrow) {
    char where[64];
    snprintf(where, sizeof(where), "first bad offset 0x%zx",
             static_cast<size_t>(damaged_at));
    EXPECT_NE(report.find(where), std::string::npos) << report;
  }
  EXPECT_NE(report.find("last 20 ops"), std::string::npos) << report;
  EXPECT_NE(report.find("#2000 "), std::string::npos) << report;
}

INSTANTIATE_TEST_SUITE_P(
    Local, FsxDetectsTest,
    ::testing::Values(
        DamageCase{"FlipByte", Damage::kFlipByte, "match no op's data"},
        DamageCase{"ZeroBytes", Damage::kZeroBytes, "actual bytes are zeros"},
        DamageCase{"OldData", Damage::kOldData, "(stale or lost data)"},
        DamageCase{"Shrink", Damage::kShrink, "size mismatch"},
        DamageCase{"Grow", Damage::kGrow, "size mismatch"}),
    [](const ::testing::TestParamInfo<DamageCase>& param_info) {
      return std::string(param_info.param.name);
    });

// The op sequence, and so the files, are a function of the options.
TEST(FsxLocalTest, SameSeedSameFiles) {
  TempDir a, b;
  ASSERT_FALSE(a.path().empty());
  ASSERT_FALSE(b.path().empty());
  FsxOptions options;
  options.seed = Seed(5);
  options.num_ops = 3000;
  options.max_file_size = 512 << 10;
  options.num_files = 3;
  for (const TempDir* dir : {&a, &b}) {
    options.dir = dir->path();
    Fsx fsx(options);
    ASSERT_TRUE(RunFsx(fsx).ok());
  }
  for (int i = 0; i < options.num_files; ++i) {
    const std::string name = "/fsx." + std::to_string(i);
    EXPECT_EQ(Difference(ReadFile(a.path() + name), ReadFile(b.path() + name)),
              "")
        << name;
  }
}

// --- Runs inside a real mount. ---

class FsxMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
  }

  // Mounts fgds with `args` and runs fsx in a subdirectory of the mount.
  void RunInMount(const std::vector<std::string>& args, FsxOptions options) {
    MountOptions mount_options;
    mount_options.extra_args = args;
    auto fs = MountedFs::Start(mount_options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    options.dir = (*fs)->mountpoint() + "/fsx";
    ASSERT_EQ(mkdir(options.dir.c_str(), 0755), 0) << strerror(errno);
    Fsx fsx(options);
    absl::Status s = RunFsx(fsx);
    EXPECT_TRUE(s.ok()) << s;
  }
};

TEST_F(FsxMountTest, Default) {
  FsxOptions options;
  options.seed = Seed(1);
  options.num_ops = 35000;
  options.max_file_size = 2 << 20;
  options.num_readers = 2;
  options.reader_phase_interval = 2500;
  RunInMount({}, options);
}

TEST_F(FsxMountTest, WritebackCache) {
  FsxOptions options;
  options.seed = Seed(2);
  options.num_ops = 25000;
  options.max_file_size = 4 << 20;
  options.num_files = 3;
  options.num_readers = 2;
  options.reader_phase_interval = 2500;
  RunInMount({"--writeback-cache"}, options);
}

TEST_F(FsxMountTest, DirectIo) {
  FsxOptions options;
  options.seed = Seed(3);
  options.num_ops = 25000;
  options.max_file_size = 1 << 20;
  options.num_readers = 2;
  options.reader_phase_interval = 2500;
  RunInMount({"--direct-io"}, options);
}

// The same seed on a local directory and in the mount must leave the same
// bytes, seen through the mount and, after unmounting, in the backing
// directory (so nothing stayed behind in a cache).
TEST_F(FsxMountTest, MatchesLocalDirectory) {
  FsxOptions options;
  options.seed = Seed(4);
  options.num_ops = 15000;
  options.max_file_size = 1 << 20;
  options.num_files = 3;

  TempDir local;
  ASSERT_FALSE(local.path().empty());
  options.dir = local.path();
  Fsx local_fsx(options);
  ASSERT_TRUE(local_fsx.Run().ok());

  auto fs = MountedFs::Start();
  ASSERT_TRUE(fs.ok()) << fs.status();
  options.dir = (*fs)->mountpoint();
  Fsx mount_fsx(options);
  absl::Status s = RunFsx(mount_fsx);
  ASSERT_TRUE(s.ok()) << s;

  std::vector<std::string> want;
  for (int i = 0; i < options.num_files; ++i) {
    const std::string name = "/fsx." + std::to_string(i);
    want.push_back(ReadFile(local.path() + name));
    EXPECT_EQ(Difference(ReadFile((*fs)->mountpoint() + name), want.back()), "")
        << name << " in the mount";
  }
  ASSERT_TRUE((*fs)->Unmount().ok());
  for (int i = 0; i < options.num_files; ++i) {
    const std::string name = "/fsx." + std::to_string(i);
    EXPECT_EQ(Difference(ReadFile((*fs)->backing() + name), want[i]), "")
        << name << " in the backing directory";
  }
}

}  // namespace
}  // namespace fgds::testing
