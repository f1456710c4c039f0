// The daemon's threads against a hostile local user (fgds-bob): rings must
// not cost threads (a tasks limit such as systemd's TasksMax must not end
// the daemon), and nothing a client does with its own eventfds may keep
// the daemon from exiting at unmount.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/usrbio_harness.h"
#include "tests/lib/proc_status.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

// Threads of process `pid` (/proc/<pid>/status), or -1.
int ThreadsOf(pid_t pid) {
  const std::string threads = ProcStatusField(pid, "Threads");
  return threads.empty() ? -1 : std::stoi(threads);
}

// Whether process `pid` (a child of ours, so it stays a zombie until
// reaped) exits within `limit`.
bool ExitsWithin(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ProcRunning(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Whether a thread of process `pid` is inside read(2) on an eventfd.
bool ThreadReadsAnEventfd(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  DIR* d = opendir((proc + "/task").c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || found) continue;
    std::ifstream syscall(proc + "/task/" + e->d_name + "/syscall");
    long nr = -1;
    std::string fd_hex;
    if (!(syscall >> nr >> fd_hex) || nr != SYS_read) continue;
    const std::string link =
        proc + "/fd/" + std::to_string(std::stoul(fd_hex, nullptr, 16));
    char target[64] = {};
    found = readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
            strcmp(target, "anon_inode:[eventfd]") == 0;
  }
  closedir(d);
  return found;
}

// A pids cgroup (v1 or v2) holding one process with a tasks limit, as
// systemd's TasksMax makes one; removed when destroyed.
class TasksLimit {
 public:
  // Empty path(): no writable pids controller here.
  TasksLimit(pid_t pid, int max_tasks) {
    for (const char* root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      std::string dir =
          std::string(root) + "/fgds-tasks-test-" + std::to_string(getpid());
      if (mkdir(dir.c_str(), 0755) != 0) continue;
      if (Write(dir + "/pids.max", std::to_string(max_tasks)) &&
          Write(dir + "/cgroup.procs", std::to_string(pid))) {
        path_ = dir;
        return;
      }
      rmdir(dir.c_str());
    }
  }
  ~TasksLimit() {
    if (path_.empty()) return;
    // The daemon has exited by now (or is moved back with it gone).
    for (int i = 0; i < 100 && rmdir(path_.c_str()) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const std::string& path() const { return path_; }

 private:
  static bool Write(const std::string& file, const std::string& value) {
    std::ofstream out(file);
    out << value;
    out.flush();
    return out.good();
  }
  std::string path_;
};

class DaemonThreadsTest : public UsrbioTest {
 protected:
  void SetUp() override {
    UsrbioTest::SetUp();
    if (IsSkipped()) return;
    // These tests are about threads: bob's per-user iors (docs/limits.md,
    // 64 on a 2-CPU machine) must not stop him before the daemon's threads
    // would have.
    fs_.reset();
    MountOptions options;
    options.extra_args = {"--user-rings", "1000"};
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    auto bob = EnsureTestUser(kBob);
    if (!bob.ok()) GTEST_SKIP() << bob.status();
    bob_ = *bob;
  }

  // Runs `body` as bob in a child; returns the child's pid.
  template <typename Body>
  pid_t StartAsBob(Body body) {
    pid_t pid = fork();
    if (pid == 0) {
      if (BecomeUser(bob_) != 0) _exit(126);
      _exit(body());
    }
    return pid;
  }
  static int Reap(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
  }

  TestUser bob_;
};

TEST_F(DaemonThreadsTest, ManyRingsUnderATasksLimitDoNotEndTheDaemon) {
  // The issue: a thread per ring, so with TasksMax=300 the 287th ring of
  // one user aborted the daemon (std::system_error from std::thread).
  const pid_t daemon = fs_->daemon_pid();
  const int threads = ThreadsOf(daemon);
  ASSERT_GT(threads, 0);
  // Room for the FUSE threads the mount may still start, not for rings.
  TasksLimit limit(daemon, threads + 20);
  if (limit.path().empty()) GTEST_SKIP() << "no writable pids cgroup";
  constexpr int kRings = 300;
  const std::string mnt = fs_->mountpoint();
  pid_t bob = StartAsBob([&] {
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::unique_ptr<Ior>> rings;
    int opened = 0;
    for (int i = 0; i < kRings; ++i) {
      // A session holds at most 64 rings (SessionLimits::max_rings).
      if (i % 50 == 0) {
        sessions.push_back(std::make_unique<Session>(mnt));
        if (sessions.back()->open_result != 0) return 2;
      }
      fgds_ior_params p = {};
      p.entries = 8;
      rings.push_back(std::make_unique<Ior>(&sessions.back()->s, &p));
      if (rings.back()->result == 0) ++opened;
    }
    return opened == kRings ? 0 : 3;
  });
  EXPECT_EQ(Reap(bob), 0);
  EXPECT_EQ(kill(daemon, 0), 0) << "the daemon ended";
  EXPECT_LE(ThreadsOf(daemon), threads + 20);
  // And it still serves everyone: a file and a ring of root's.
  std::string path = Mnt("after");
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "x", 1, 0), 1);
  Session session(fs_->mountpoint());
  ASSERT_EQ(session.open_result, 0);
  Ior ior(&session.s);
  EXPECT_EQ(ior.result, 0);
  close(fd);
  EXPECT_TRUE(fs_->Unmount().ok());
}

TEST_F(DaemonThreadsTest, ARaceOnABlockingSubmitEventfdCannotHoldUpUnmount) {
  // The issue: bob clears O_NONBLOCK on his submit eventfd (the daemon
  // shares the file description) and reads it too; when his read won the
  // race after a kick (the daemon polled, then read), the daemon's read
  // blocked for good, and after `fgds umount` the daemon never exited. The
  // window is short: bob races eight rings until the test sees a daemon
  // thread inside read(2) on an eventfd (or for 5 s), then goes quiet.
  const std::string mnt = fs_->mountpoint();
  const pid_t daemon = fs_->daemon_pid();
  int ready[2], quiet[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe2(quiet, O_NONBLOCK), 0);
  pid_t bob = StartAsBob([&] {
    close(ready[0]);
    close(quiet[1]);
    Session session(mnt);
    if (session.open_result != 0) return 2;
    std::vector<std::unique_ptr<Ior>> rings;
    std::vector<int> efds;
    for (int i = 0; i < 8; ++i) {
      rings.push_back(std::make_unique<Ior>(&session.s));
      if (rings.back()->result != 0) return 3;
      const int efd = rings.back()->ior.submit_efd;
      fcntl(efd, F_SETFL, fcntl(efd, F_GETFL) & ~O_NONBLOCK);
      efds.push_back(efd);
    }
    (void)!write(ready[1], "r", 1);
    std::atomic<bool> stop{false};
    std::thread thief([&] {
      unsigned delay_us = 0;
      while (!stop.load()) {
        // Reads of its own that never block (RWF_NOWAIT), at varying
        // delays after the kicks.
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        delay_us = (delay_us + 7) % 60;
        for (int efd : efds) {
          uint64_t count;
          iovec iov = {&count, sizeof(count)};
          (void)!preadv2(efd, &iov, 1, -1, RWF_NOWAIT);
        }
      }
    });
    char byte;
    while (read(quiet[0], &byte, 1) != 1) {
      for (int efd : efds) {
        uint64_t one = 1;
        (void)!write(efd, &one, sizeof(one));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    stop.store(true);
    thief.join();
    // Quiet from here, until killed.
    for (;;) pause();
  });
  close(ready[1]);
  close(quiet[0]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool wedged = false;
  while (!wedged && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    wedged = ThreadReadsAnEventfd(daemon);
  }
  ASSERT_EQ(write(quiet[1], "q", 1), 1);
  close(quiet[1]);
  EXPECT_FALSE(wedged) << "a daemon thread reads a client's eventfd";
  // `fgds umount` is umount(2) for root; the daemon must then exit on
  // its own (MountedFs::Unmount would kill it after 5 s).
  ASSERT_EQ(umount2(mnt.c_str(), 0), 0) << strerror(errno);
  EXPECT_TRUE(ExitsWithin(daemon, std::chrono::seconds(20)))
      << "the daemon did not exit after unmount";
  EXPECT_TRUE(fs_->Unmount().ok());
  kill(bob, SIGKILL);
  Reap(bob);
}

}  // namespace
}  // namespace fgds::testing
