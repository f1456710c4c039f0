// Mount lifecycle: clear errors from `fgds mount`/`umount`, unmount with
// open files, a daemon killed under readers, and a remount without cleanup.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs the fgds binary with `args`, as `uid` if given.
CommandResult RunFgds(const std::vector<std::string>& args, uid_t uid = 0) {
  int pipefd[2];
  EXPECT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    // A daemonized child must not keep the pipe open, or reading to EOF
    // would wait for the daemon's exit.
    close(pipefd[0]);
    close(pipefd[1]);
    if (uid != 0 && (setgid(uid) != 0 || setuid(uid) != 0)) _exit(126);
    std::vector<std::string> all = {FgdsBinary()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  std::string output;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) output.append(buf, n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
          output};
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto dir = MakeTempDir("fgds-lifecycle.");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    chmod(root_.c_str(), 0755);
    mnt_ = root_ + "/mnt";
    data_ = root_ + "/data";
    ASSERT_EQ(mkdir(mnt_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(data_.c_str(), 0755), 0);
  }
  void TearDown() override {
    if (!root_.empty()) {
      RunFgds({"umount", "-l", mnt_});
      RemoveTree(root_);
    }
  }
  std::string root_, mnt_, data_;
};

TEST_F(LifecycleTest, BackgroundMountReturnsWhenLiveAndUmountStopsIt) {
  CommandResult r = RunFgds({"mount", "--data", data_, mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Usable at once: no sleep between mount returning and the first access.
  EXPECT_TRUE(IsFuseMount(mnt_));
  { std::ofstream(mnt_ + "/f") << "data"; }
  struct stat st;
  EXPECT_EQ(stat((data_ + "/f").c_str(), &st), 0);
  r = RunFgds({"stat", mnt_});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("write"), std::string::npos) << r.output;
  r = RunFgds({"umount", mnt_});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(IsFuseMount(mnt_));
}

TEST_F(LifecycleTest, MountErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    uid_t uid;
    std::string message;
  };
  const Case kCases[] = {
      {{"mount", "--data", data_, root_ + "/nope"}, 0, "does not exist"},
      {{"mount", "--data", root_ + "/nope", mnt_}, 0, "does not exist"},
      {{"mount", "--data", data_, "--bogus", mnt_}, 0, "unknown option"},
      {{"mount", "--data", data_}, 0, "missing MOUNTPOINT"},
      {{"mount", "--data", data_, mnt_}, 65534, "must run as root"},
      {{"mount", "--data", root_, mnt_}, 0, "must not contain"},
      {{"umount", data_}, 0, "not a mountpoint"},
      {{"frobnicate"}, 0, "unknown command"},
  };
  for (const Case& c : kCases) {
    CommandResult r = RunFgds(c.args, c.uid);
    EXPECT_NE(r.exit_code, 0) << c.message;
    EXPECT_NE(r.output.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << r.output;
  }
}

TEST_F(LifecycleTest, SecondMountOnSamePointIsRefused) {
  ASSERT_EQ(RunFgds({"mount", "--data", data_, mnt_}).exit_code, 0);
  CommandResult r = RunFgds({"mount", "--data", data_, mnt_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("already mounted"), std::string::npos) << r.output;
  EXPECT_EQ(RunFgds({"umount", mnt_}).exit_code, 0);
}

TEST_F(LifecycleTest, UmountWithOpenFileIsBusyThenLazyWorks) {
  ASSERT_EQ(RunFgds({"mount", "--data", data_, mnt_}).exit_code, 0);
  int fd = open((mnt_ + "/open").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  CommandResult r = RunFgds({"umount", mnt_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("busy"), std::string::npos) << r.output;
  ASSERT_EQ(RunFgds({"umount", "-l", mnt_}).exit_code, 0);
  EXPECT_FALSE(IsFuseMount(mnt_));
  // The open file keeps working after the detach, and its data lands.
  EXPECT_EQ(pwrite(fd, "late", 4, 0), 4);
  EXPECT_EQ(fsync(fd), 0);
  close(fd);
  std::ifstream in(data_ + "/open");
  std::string content;
  in >> content;
  EXPECT_EQ(content, "late");
}

TEST_F(LifecycleTest, SigtermUnmountsCleanly) {
  auto fs = MountedFs::Start();
  ASSERT_TRUE(fs.ok()) << fs.status();
  std::string mnt = (*fs)->mountpoint();
  kill((*fs)->daemon_pid(), SIGTERM);
  for (int i = 0; i < 500 && IsFuseMount(mnt); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(IsFuseMount(mnt));
}

// The read-ahead asked for is the mount's as soon as the mount answers: the
// daemon raises it in sysfs before it answers INIT, with no call on its own
// mount (which, waiting for its own loop, hung the daemon at SIGTERM).
TEST_F(LifecycleTest, ReadaheadIsSetOnceTheMountAnswers) {
  struct Case {
    std::vector<std::string> args;
    std::string kb;  // what sysfs must say
  };
  const Case kCases[] = {
      {{}, "4096"},  // the default
      {{"--readahead-kb", "8192"}, "8192"},
      {{"--readahead-kb", "64"}, "64"},
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.kb);
    MountOptions options;
    options.extra_args = c.args;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    std::string device = MountDevice((*fs)->mountpoint());
    ASSERT_NE(device, "");
    std::ifstream in("/sys/class/bdi/" + device + "/read_ahead_kb");
    std::string kb;
    in >> kb;
    EXPECT_EQ(kb, c.kb);
  }
}

// A killed daemon must never hang its clients: readers in flight and later
// accesses fail with ENOTCONN, and a new mount needs no manual cleanup.
TEST_F(LifecycleTest, KilledDaemonGivesEnotconnAndRemountWorks) {
  auto fs = MountedFs::Start();
  ASSERT_TRUE(fs.ok()) << fs.status();
  std::string mnt = (*fs)->mountpoint();
  std::string file = mnt + "/big";
  {
    std::vector<char> block(1 << 20, 'x');
    int fd = open(file.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < 64; ++i) {
      ASSERT_EQ(write(fd, block.data(), block.size()),
                static_cast<ssize_t>(block.size()));
    }
    close(fd);
  }
  // Readers loop until they see an error; they must all see one soon.
  std::atomic<int> enotconn{0};
  std::atomic<int> other_errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      // Aligned: in passthrough, O_DIRECT is the backing file's, which
      // refuses unaligned buffers (EINVAL); its reads then go on after the
      // daemon died, and the next open fails.
      std::unique_ptr<char, decltype(&free)> buf(
          static_cast<char*>(aligned_alloc(4096, 1 << 16)), &free);
      for (;;) {
        int fd = open(file.c_str(), O_RDONLY | O_DIRECT);
        if (fd < 0) {
          // ECONNABORTED: the open was in flight when the daemon died (the
          // kernel ends such requests with it; later ones get ENOTCONN).
          if (errno == ENOTCONN || errno == ECONNABORTED) {
            enotconn++;
          } else {
            ADD_FAILURE() << "open after the kill: " << strerror(errno);
            other_errors++;
          }
          return;
        }
        ssize_t n;
        while ((n = read(fd, buf.get(), 1 << 16)) > 0) {
        }
        int err = errno;
        close(fd);
        if (n < 0) {
          if (err == ENOTCONN || err == ECONNABORTED) {
            enotconn++;
          } else {
            ADD_FAILURE() << "read after the kill: " << strerror(err);
            other_errors++;
          }
          return;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (*fs)->KillDaemon(SIGKILL);
  for (auto& r : readers) r.join();  // a hang here fails by test timeout
  EXPECT_EQ(enotconn.load(), 4);
  EXPECT_EQ(other_errors.load(), 0);
  struct stat st;
  EXPECT_NE(stat(file.c_str(), &st), 0);
  EXPECT_EQ(errno, ENOTCONN);

  absl::Status remount = (*fs)->Remount();
  ASSERT_TRUE(remount.ok()) << remount;
  EXPECT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 64 << 20);
}

}  // namespace
}  // namespace fgds::testing
