// A daemon that dies while it holds a client's descriptor of a file on its
// own mount (a usrbio file registration receives it over SCM_RIGHTS) must
// still finish exiting, and must not wedge other processes on the mount.
//
// Seen before the fix: the daemon halted (by TSan) mid-registration, its
// exit closed that descriptor, the kernel sent FLUSH to the daemon itself
// and waited for an answer no thread was left to give; the daemon never
// became reapable, and every process touching the mount hung with it,
// until a fusectl abort. fusefs/abort_on_death.h says why and what fixed it.
//
// Every wait here is bounded: when something does not end in time, the test
// aborts the connection through fusectl itself, so a failure is reported,
// never a hang.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBound = std::chrono::seconds(10);

// Whether our child `pid` has ended, without reaping it (MountedFs reaps
// the daemon). Fills *info with how.
bool Ended(pid_t pid, siginfo_t* info) {
  *info = {};
  return waitid(P_PID, static_cast<id_t>(pid), info,
                WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info->si_pid == pid;
}

bool EndsWithin(pid_t pid, Clock::duration bound, siginfo_t* info) {
  const auto deadline = Clock::now() + bound;
  while (!Ended(pid, info)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The connection's abort file, found from the mount table (never by
// touching the mount).
std::string AbortPath(const std::string& mnt) {
  const std::string dev = MountDevice(mnt);  // "major:minor"
  const size_t colon = dev.find(':');
  if (colon == std::string::npos) return "";
  const unsigned major_num = std::stoul(dev.substr(0, colon));
  const unsigned minor_num = std::stoul(dev.substr(colon + 1));
  return "/sys/fs/fuse/connections/" +
         std::to_string((major_num << 20) | minor_num) + "/abort";
}

// Reaps a child, first freeing whatever might keep it waiting.
int Reap(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::string HowItEnded(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) {
    return "exit " + std::to_string(info.si_status);
  }
  return "signal " + std::to_string(info.si_status);
}

class DaemonDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    // A daemon that aborts must not spend the bound writing a core.
    getrlimit(RLIMIT_CORE, &saved_core_);
    rlimit none = {0, saved_core_.rlim_max};
    setrlimit(RLIMIT_CORE, &none);
  }
  void TearDown() override { setrlimit(RLIMIT_CORE, &saved_core_); }

  // Mounts a daemon with FGDS_TEST_DIE_IN_REGISTRATION=`how` (empty: none).
  void Mount(const char* how) {
    if (how[0] != '\0') setenv("FGDS_TEST_DIE_IN_REGISTRATION", how, 1);
    auto fs = MountedFs::Start();
    unsetenv("FGDS_TEST_DIE_IN_REGISTRATION");
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    mnt_ = fs_->mountpoint();
    abort_path_ = AbortPath(mnt_);
    ASSERT_FALSE(abort_path_.empty());
    file_ = mnt_ + "/registered";
    int fd = open(file_.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0) << strerror(errno);
    ASSERT_EQ(pwrite(fd, "data", 4, 0), 4);
    close(fd);
  }

  // A client that registers the file `rounds` times (0: until it fails).
  // Exits 0 once a registration failed (the daemon went away).
  pid_t StartClient(int rounds) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    fgds_session s = {};
    if (fgds_session_open(&s, mnt_.c_str(), nullptr) != 0) _exit(2);
    for (int i = 0; rounds == 0 || i < rounds; ++i) {
      int fd = open(file_.c_str(), O_RDWR);
      if (fd < 0) _exit(0);  // the mount is gone
      int id = fgds_fd_register(&s, fd, 0);
      close(fd);
      if (id < 0) _exit(0);
      fgds_fd_unregister(&s, id);
    }
    _exit(3);  // the daemon should have died
  }

  // After the daemon died: it ends within the bound, the client too, and
  // another process's call on the mount fails at once (ENOTCONN) instead
  // of waiting. Cleans up with a fusectl abort when anything is stuck.
  void ExpectNothingWedged(pid_t client, siginfo_t* daemon_end) {
    const pid_t daemon = fs_->daemon_pid();
    const bool daemon_ended = EndsWithin(daemon, kBound, daemon_end);
    siginfo_t info;
    const bool client_ended = EndsWithin(client, kBound, &info);
    pid_t other = fork();
    if (other == 0) {
      struct statfs sfs;
      _exit(statfs(mnt_.c_str(), &sfs) != 0 && errno == ENOTCONN ? 0 : 1);
    }
    const bool other_ended = EndsWithin(other, kBound, &info);
    if (!daemon_ended || !client_ended || !other_ended) {
      // What the fix does, done by hand so that this test ends.
      std::ofstream(abort_path_) << "1\n";
    }
    Reap(client);
    const int other_status = Reap(other);
    EXPECT_TRUE(daemon_ended)
        << "the daemon did not finish exiting within the bound (it waits on "
           "its own mount)";
    EXPECT_TRUE(client_ended) << "the client hung on the dead mount";
    EXPECT_TRUE(other_ended) << "statfs of the mount hung";
    EXPECT_TRUE(WIFEXITED(other_status) && WEXITSTATUS(other_status) == 0)
        << "statfs of the dead mount should fail with ENOTCONN";
    if (!daemon_ended) EndsWithin(daemon, kBound, daemon_end);
  }

  std::unique_ptr<MountedFs> fs_;
  std::string mnt_;
  std::string abort_path_;
  std::string file_;
  rlimit saved_core_ = {};
};

TEST_F(DaemonDeathTest, AbortWhileHoldingAClientDescriptorOfItsMount) {
  ASSERT_NO_FATAL_FAILURE(Mount("abort"));
  pid_t client = StartClient(1);
  siginfo_t end;
  ExpectNothingWedged(client, &end);
  EXPECT_TRUE(end.si_code != CLD_EXITED && end.si_status == SIGABRT)
      << HowItEnded(end);
}

// As a sanitizer halting the daemon does: exit_group from one thread.
TEST_F(DaemonDeathTest, ExitWhileHoldingAClientDescriptorOfItsMount) {
  ASSERT_NO_FATAL_FAILURE(Mount("exit"));
  pid_t client = StartClient(1);
  siginfo_t end;
  ExpectNothingWedged(client, &end);
  EXPECT_TRUE(end.si_code == CLD_EXITED && end.si_status == 66)
      << HowItEnded(end);
}

TEST_F(DaemonDeathTest, SigkillWhileHoldingAClientDescriptorOfItsMount) {
  ASSERT_NO_FATAL_FAILURE(Mount("kill"));
  pid_t client = StartClient(1);
  siginfo_t end;
  ExpectNothingWedged(client, &end);
  EXPECT_TRUE(end.si_code == CLD_KILLED && end.si_status == SIGKILL)
      << HowItEnded(end);
}

// SIGKILL from outside while a client registers in a loop: whether or not
// it lands inside a registration, the daemon ends and the mount fails fast.
TEST_F(DaemonDeathTest, SigkillDuringRegistrationsFromOutside) {
  ASSERT_NO_FATAL_FAILURE(Mount(""));
  pid_t client = StartClient(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(fs_->daemon_pid(), SIGKILL);
  siginfo_t end;
  ExpectNothingWedged(client, &end);
  EXPECT_TRUE(end.si_code == CLD_KILLED && end.si_status == SIGKILL)
      << HowItEnded(end);
}

// The guard holds nothing on the mount (a plain umount succeeds, not
// EBUSY), and a clean unmount disarms it: the daemon reaps it on the way
// out.
TEST_F(DaemonDeathTest, TheGuardKeepsNothingBusyAndEndsWithTheDaemon) {
  ASSERT_NO_FATAL_FAILURE(Mount(""));
  const pid_t daemon = fs_->daemon_pid();
  // The guard is the daemon's child named fgds-guard.
  pid_t guard = 0;
  std::ifstream children("/proc/" + std::to_string(daemon) + "/task/" +
                         std::to_string(daemon) + "/children");
  for (pid_t child; children >> child;) {
    std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
    std::string name;
    comm >> name;
    if (name == "fgds-guard") guard = child;
  }
  ASSERT_GT(guard, 0) << "no guard process";
  EXPECT_EQ(umount2(mnt_.c_str(), 0), 0) << strerror(errno);
  siginfo_t end;
  ASSERT_TRUE(EndsWithin(daemon, kBound, &end));
  EXPECT_TRUE(end.si_code == CLD_EXITED && end.si_status == 0)
      << HowItEnded(end);
  // Reaped by the daemon before it exited: no such process any more.
  EXPECT_NE(kill(guard, 0), 0);
}

}  // namespace
}  // namespace fgds::testing
