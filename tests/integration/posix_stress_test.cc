// Every POSIX operation through the daemon's data path completes: several
// processes mix 4 KiB random writes (aligned and not), reads and fsyncs on
// shared and private files of a real mount served by the daemon (FUSE
// passthrough off), and a watchdog fails the test, with the daemon's thread
// stacks and the FUSE connection's counters, as soon as any single
// operation has run longer than the limit (tests/lib/posix_stress.h).
//
// Why: a 512 MiB random 4 KiB POSIX bench once hung in a FUSE write (one
// request never answered, every daemon thread idle), and a request never
// answered leaves a user's process asleep forever. The configurations are
// those that change which daemon code serves the data: the default cache,
// the writeback cache (writes come from the kernel's writeback, partial
// pages are read first), a single io_uring worker that never spins (all
// reads through one ring, every hand-off a wakeup), and FUSE over io_uring
// (requests through the kernel's rings instead of /dev/fuse reads: on the
// development VM a mount gets it whenever fuse_uring_test has the module
// parameter on, which may be how the hang's mount was made).
//
// Bounded for CI: 8 s of load per configuration, 2 processes (about a
// minute in all, mounts and the watchdog check included).
// FGDS_STRESS_SECONDS and FGDS_STRESS_PROCESSES run it longer and wider by
// hand.
#include "tests/lib/posix_stress.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "tests/lib/mount_features.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

int EnvInt(const char* name, int fallback) {
  int value = 0;
  const char* env = getenv(name);
  if (env != nullptr && absl::SimpleAtoi(env, &value) && value > 0) {
    return value;
  }
  return fallback;
}

struct Config {
  const char* name;
  std::vector<std::string> args;
  // Requests through FUSE over io_uring (the fuse module's enable_uring,
  // turned on for this mount and put back after; skipped where the kernel
  // or libfuse lacks it).
  bool fuse_uring = false;
};

constexpr char kEnableUring[] = "/sys/module/fuse/parameters/enable_uring";

std::string ReadEnableUring() {
  std::ifstream in(kEnableUring);
  std::string value;
  std::getline(in, value);
  return value;
}

void WriteEnableUring(const char* value) {
  std::ofstream out(kEnableUring);
  out << value;
}
void PrintTo(const Config& config, std::ostream* os) { *os << config.name; }

class PosixStressTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    MountOptions options;
    options.extra_args = {"--passthrough", "off"};
    for (const std::string& arg : GetParam().args) {
      options.extra_args.push_back(arg);
    }
    if (GetParam().fuse_uring) {
      saved_enable_uring_ = ReadEnableUring();
      if (saved_enable_uring_.empty()) {
        GTEST_SKIP() << "this kernel has no FUSE over io_uring";
      }
      // The parameter is read at mount time: other mounts made meanwhile
      // get it too (as with fuse_uring_test), which is harmless.
      WriteEnableUring("1");
    }
    auto fs = MountedFs::Start(options);
    if (absl::IsFailedPrecondition(fs.status())) GTEST_SKIP() << fs.status();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = std::move(*fs);
    if (GetParam().fuse_uring && !FuseUringOn(fs_->mountpoint())) {
      GTEST_SKIP() << MountFeatures(fs_->mountpoint());
    }
  }
  void TearDown() override {
    fs_.reset();
    if (!saved_enable_uring_.empty()) {
      WriteEnableUring(saved_enable_uring_ == "Y" ? "1" : "0");
    }
  }

  PosixStressOptions Options() const {
    PosixStressOptions options;
    options.dir = fs_->mountpoint() + "/stress";
    options.mountpoint = fs_->mountpoint();
    options.daemon_pid = fs_->daemon_pid();
    options.processes = EnvInt("FGDS_STRESS_PROCESSES", 2);
    options.seconds = EnvInt("FGDS_STRESS_SECONDS", 8);
    options.op_limit_seconds = 30;
    return options;
  }

  std::unique_ptr<MountedFs> fs_;
  std::string saved_enable_uring_;
};

TEST_P(PosixStressTest, EveryOperationCompletes) {
  const PosixStressResult r = RunPosixStress(Options());
  EXPECT_EQ(r.stuck, "");
  EXPECT_EQ(r.errors, 0u) << r.first_error;
  EXPECT_GT(r.ops, 0u);
  printf("%s: %llu ops, slowest %llu ms\n", GetParam().name,
         static_cast<unsigned long long>(r.ops),
         static_cast<unsigned long long>(r.max_op_ms));
}

INSTANTIATE_TEST_SUITE_P(
    Configs, PosixStressTest,
    ::testing::Values(Config{"default", {}},
                      Config{"writeback", {"--writeback-cache"}},
                      Config{"one_worker_no_spin",
                             {"--io-workers", "1", "--io-spin-us", "0"}},
                      Config{"fuse_uring", {"--fuse-uring", "on"}, true}),
    [](const ::testing::TestParamInfo<Config>& param_info) {
      return std::string(param_info.param.name);
    });

// The checker checks: a daemon that answers nothing (stopped) must be
// reported within the limit, naming the stuck operation, and the run must
// end (the connection aborted) rather than wait with its workers.
TEST(PosixStressWatchdogTest, AnUnansweredRequestIsReported) {
  MountOptions mount_options;
  mount_options.extra_args = {"--passthrough", "off"};
  auto fs = MountedFs::Start(mount_options);
  if (absl::IsFailedPrecondition(fs.status())) GTEST_SKIP() << fs.status();
  ASSERT_TRUE(fs.ok()) << fs.status();
  PosixStressOptions options;
  options.dir = (*fs)->mountpoint() + "/stress";
  options.mountpoint = (*fs)->mountpoint();
  options.daemon_pid = (*fs)->daemon_pid();
  options.processes = 2;
  options.seconds = 20;
  options.op_limit_seconds = 2;
  options.gdb = false;  // gdb would wait for the stopped daemon
  // Files created first, so that the daemon stops while serving I/O.
  options.seconds = 1;
  ASSERT_EQ(RunPosixStress(options).stuck, "");
  options.seconds = 20;
  ASSERT_EQ(kill((*fs)->daemon_pid(), SIGSTOP), 0);
  const PosixStressResult r = RunPosixStress(options);
  kill((*fs)->daemon_pid(), SIGCONT);
  EXPECT_NE(r.stuck.find("running for"), std::string::npos) << r.stuck;
  EXPECT_NE(r.stuck.find("daemon "), std::string::npos) << r.stuck;
  EXPECT_NE(r.stuck.find("waiting "), std::string::npos) << r.stuck;
  // What a real hang's report looks like, for whoever reads the log.
  printf("%s\n", r.stuck.substr(0, 1500).c_str());
}

}  // namespace
}  // namespace fgds::testing
