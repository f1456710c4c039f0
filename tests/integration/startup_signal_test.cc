// SIGTERM at every point of the daemon's start-up: whatever state start-up
// is in, the daemon exits within a bounded time and leaves no mount behind.
//
// Two ways to reach the states: the daemon's own stop points
// (FGDS_TEST_STOP_AT in fusefs/daemon.cc: it stops itself with SIGSTOP at
// point N; the test sends SIGTERM, then SIGCONT), and SIGTERM at a sweep of
// delays after the start, for what lies between the points.
//
// Regression: a thread that waited for INIT by a statfs of the daemon's own
// mount blocked forever once SIGTERM had stopped the FUSE loop, and the
// daemon waited for that thread: the process and its mount stayed.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The start-up points of fusefs/daemon.cc (StartupPoint), 1..kStopPoints,
// and whether the mount exists when the daemon stops there.
constexpr int kStopPoints = 6;
constexpr bool kMountedAt[kStopPoints + 1] = {false, false, false, true,
                                              true,  true,  true};

// How long a signalled daemon may take to exit. Generous for a loaded
// 2-core machine under ASan; a hung daemon never exits at all.
constexpr milliseconds kExitLimit(20000);

// Exit status 0, or killed by SIGTERM's default action (before the daemon
// installs its handler).
bool ExitedCleanlyOrByTerm(int status) {
  return WIFSIGNALED(status) ? WTERMSIG(status) == SIGTERM
                             : WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class StartupSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto dir = MakeTempDir("fgds-startup.");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    mnt_ = root_ + "/mnt";
    log_ = root_ + "/daemon.log";
    data_ = root_ + "/data";
    ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(data_.c_str(), 0755), 0);
  }
  void TearDown() override {
    if (!root_.empty()) {
      Abandon();
      RemoveTree(root_);
    }
  }

  // Starts `fgds mount -f`, with FGDS_TEST_STOP_AT=stop_at unless 0.
  void Launch(int stop_at) {
    std::vector<std::string> args = {FgdsBinary(), "mount", "-f",
                                     "--data",     data_,   mnt_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      if (stop_at != 0) {
        setenv("FGDS_TEST_STOP_AT", std::to_string(stop_at).c_str(), 1);
      }
      // The daemon's messages (a sanitizer's report among them) go to a
      // file that a failure prints: ctest's log of a failed round is all
      // CI keeps.
      int log =
          open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
  }

  // Kills the daemon (if running) and detaches what it left, so that the
  // next round starts clean.
  void Abandon() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    // Mounts stack: detach all that are there.
    for (int i = 0; i < 8 && !MountDevice(mnt_).empty(); ++i) {
      umount2(mnt_.c_str(), MNT_DETACH);
    }
  }

  // Waits until the daemon has stopped itself; false if it exited instead
  // or did not stop in time.
  bool WaitStopped() {
    auto deadline = steady_clock::now() + kExitLimit;
    while (steady_clock::now() < deadline) {
      int status;
      pid_t r = waitpid(pid_, &status, WUNTRACED | WNOHANG);
      if (r == pid_ && WIFSTOPPED(status)) return true;
      if (r == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }

  // Waits up to kExitLimit for the daemon to exit: its wait status, or -1
  // if it did not (the daemon then still runs).
  int WaitExit() {
    auto deadline = steady_clock::now() + kExitLimit;
    while (steady_clock::now() < deadline) {
      int status;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    return -1;
  }

  // What the last daemon printed, for a failure's message.
  std::string DaemonLog() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return "\n--- the daemon printed:\n" + text.str();
  }

  std::string root_, mnt_, data_, log_;
  pid_t pid_ = -1;
};

TEST_F(StartupSignalTest, SigtermAtEachStopPointExitsAndUnmounts) {
  for (int point = 1; point <= kStopPoints; ++point) {
    SCOPED_TRACE("FGDS_TEST_STOP_AT=" + std::to_string(point));
    ASSERT_NO_FATAL_FAILURE(Launch(point));
    if (!WaitStopped()) {
      // A thread in an uninterruptible wait (on the mount) also keeps the
      // process from stopping.
      ADD_FAILURE() << "the daemon did not stop at the point" << DaemonLog();
      Abandon();
      continue;
    }
    EXPECT_EQ(!MountDevice(mnt_).empty(), kMountedAt[point]);
    kill(pid_, SIGTERM);
    kill(pid_, SIGCONT);
    int status = WaitExit();
    if (status == -1) {
      ADD_FAILURE() << "no exit within " << kExitLimit.count() << " ms"
                    << DaemonLog();
      Abandon();
      continue;
    }
    if (point == 1) {
      // No handler yet: SIGTERM's default action, before anything exists.
      EXPECT_TRUE(ExitedCleanlyOrByTerm(status)) << status << DaemonLog();
    } else {
      // The handler turns SIGTERM into a clean stop.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << status << DaemonLog();
    }
    EXPECT_EQ(MountDevice(mnt_), "") << "mount left behind" << DaemonLog();
    Abandon();
  }
}

// Between the points: SIGTERM after a sweep of delays from the start.
TEST_F(StartupSignalTest, SigtermAfterAnyDelayExitsAndUnmounts) {
  for (int delay_ms :
       {0, 1, 2, 5, 10, 20, 35, 50, 75, 100, 150, 250, 400, 700, 1000}) {
    SCOPED_TRACE("SIGTERM after " + std::to_string(delay_ms) + " ms");
    ASSERT_NO_FATAL_FAILURE(Launch(0));
    std::this_thread::sleep_for(milliseconds(delay_ms));
    kill(pid_, SIGTERM);
    int status = WaitExit();
    if (status == -1) {
      ADD_FAILURE() << "no exit within " << kExitLimit.count() << " ms"
                    << DaemonLog();
      Abandon();
      continue;
    }
    EXPECT_TRUE(ExitedCleanlyOrByTerm(status)) << status << DaemonLog();
    EXPECT_EQ(MountDevice(mnt_), "") << "mount left behind" << DaemonLog();
    Abandon();
  }
}

}  // namespace
}  // namespace fgds::testing
