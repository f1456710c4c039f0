// ceph_fault_test: faults of the cluster and of the daemon, with I/O going
// through an fgds mount of a throwaway CephFS (start-cluster.sh: mon, mgr,
// 3 memstore OSDs, pools of size 2 and min_size 1, one MDS). The tests kill
// daemons, so the binary starts a cluster of its own and stops it at the
// end.
//
// What each proves is in its comment; the stalls each measures are printed
// ("fault: ...", to stdout) for docs/ceph.md. Every wait is bounded: an
// operation that could block on the cluster runs in a child process the test
// kills at its deadline, so a hang fails the test instead of hanging it.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "tests/ceph/test_cluster.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

TestCluster* cluster = nullptr;

class FaultEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setvbuf(stdout, nullptr, _IOLBF, 0);  // the measurements, in order
    cluster = new TestCluster;
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      cluster->skip_reason = "needs root and /dev/fuse";
      return;
    }
    bool missing = false;
    if (!cluster->Start("CEPH_OSDS=3 CEPH_POOL_SIZE=2", &missing)) {
      if (!missing) ADD_FAILURE() << "test cluster did not start";
      return;
    }
  }
  void TearDown() override {
    cluster->Stop();
    delete cluster;
    cluster = nullptr;
  }
};

const auto* const env =
    ::testing::AddGlobalTestEnvironment(new FaultEnvironment);

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// Position-dependent bytes: a block read back from the wrong offset or an
// older write does not match.
char PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x =
      ((i + 1) ^ (seed * 0xD6E8FEB86659FD93ull)) * 0x9E3779B97F4A7C15ull;
  return static_cast<char>(x >> 56);
}
std::string Pattern(uint64_t seed, uint64_t offset, size_t len) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) s[i] = PatternByte(seed, offset + i);
  return s;
}

// The first offset where `path` differs from `seed`'s pattern over `size`
// bytes (or its size differs), or -1 when it matches; -2 if unreadable.
int64_t FirstMismatch(const std::string& path, uint64_t seed, uint64_t size) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return -2;
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != size) {
    close(fd);
    return 0;
  }
  std::string buf(1 << 20, '\0');
  for (uint64_t off = 0; off < size;) {
    ssize_t n = pread(fd, buf.data(), buf.size(), off);
    if (n <= 0) {
      close(fd);
      return n == 0 ? static_cast<int64_t>(off) : -2;
    }
    std::string want = Pattern(seed, off, n);
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != want[i]) {
        close(fd);
        return static_cast<int64_t>(off + i);
      }
    }
    off += n;
  }
  close(fd);
  return -1;
}

// Runs `op` in a child process and waits at most `timeout_s` for it. The
// child's exit status is op's return value (0 or an errno). Returns that,
// or -1 if it had to be killed at the deadline; *secs is how long it took.
int RunBounded(double timeout_s, double* secs, const std::function<int()>& op) {
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) _exit(op());
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (SecondsSince(start) > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *secs = SecondsSince(start);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *secs = SecondsSince(start);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Waits (bounded) until `ceph osd stat` reports n OSDs up.
bool WaitOsdsUp(int n, double timeout_s) {
  auto start = std::chrono::steady_clock::now();
  const std::string want = absl::StrCat(n, " up");
  while (SecondsSince(start) < timeout_s) {
    if (cluster->Ceph("osd stat").find(want) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return false;
}

class CephFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cluster->conf.empty()) GTEST_SKIP() << cluster->skip_reason;
    auto fs = Mount();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    dir_ = absl::StrCat(
        fs_->mountpoint(), "/",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0) << strerror(errno);
  }

  // A mount of the file system's root: a daemon with a Ceph session (a
  // client) of its own, so its reads come from the OSDs, not from another
  // mount's cache.
  static absl::StatusOr<std::unique_ptr<MountedFs>> Mount(
      const std::vector<std::string>& more_args = {}) {
    MountOptions options;
    options.extra_args = {"--backend", "ceph", "--ceph-conf", cluster->conf};
    options.extra_args.insert(options.extra_args.end(), more_args.begin(),
                              more_args.end());
    options.timeout_ms = 40000;
    return MountedFs::Start(options);
  }

  // Writes `size` bytes of `seed`'s pattern to `path` in 1 MiB writes,
  // fsyncing every `fsync_every` MiB; returns 0 or the first errno, and the
  // longest single write+fsync in *max_stall.
  static int WritePattern(const std::string& path, uint64_t seed, uint64_t size,
                          int fsync_every, double* max_stall,
                          const std::function<void(uint64_t)>& after = {}) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return errno;
    *max_stall = 0;
    const uint64_t chunk = 1 << 20;
    for (uint64_t off = 0; off < size; off += chunk) {
      auto t = std::chrono::steady_clock::now();
      std::string data = Pattern(seed, off, chunk);
      if (pwrite(fd, data.data(), chunk, off) != static_cast<ssize_t>(chunk)) {
        int err = errno;
        close(fd);
        return err;
      }
      if ((off / chunk + 1) % fsync_every == 0 && fsync(fd) != 0) {
        int err = errno;
        close(fd);
        return err;
      }
      *max_stall = std::max(*max_stall, SecondsSince(t));
      if (after) after(off + chunk);
    }
    int err = fsync(fd) == 0 ? 0 : errno;
    if (close(fd) != 0 && err == 0) err = errno;
    return err;
  }

  std::unique_ptr<MountedFs> fs_;
  std::string dir_;
};

// An OSD killed (SIGKILL) while a 48 MiB file is being written and fsynced
// through the mount: every write and fsync succeeds (the pools have a
// second replica, min_size 1), a file written and fsynced before the kill
// and the one written across it read back byte for byte through a fresh
// client, before and after the OSD is restarted and refilled.
TEST_F(CephFaultTest, OsdKilledAndRestartedDuringWrites) {
  const uint64_t kSize = 48 << 20;
  const std::string before = dir_ + "/before", across = dir_ + "/across";
  double stall = 0;
  ASSERT_EQ(WritePattern(before, 1, 16 << 20, 4, &stall), 0);

  std::atomic<bool> killed{false};
  bool kill_ok = false;
  int err = WritePattern(across, 2, kSize, 4, &stall, [&](uint64_t done) {
    if (done == 16 << 20) {
      kill_ok = cluster->Ctl("kill", "osd.1");
      killed = true;
    }
  });
  ASSERT_TRUE(kill_ok);
  EXPECT_EQ(err, 0) << strerror(err);
  printf("fault: OSD killed: longest 1 MiB write(+fsync) %.2f s\n", stall);
  EXPECT_LT(stall, 30);

  // A second client (its own session and cache) reads from the two OSDs
  // left.
  {
    auto fresh = Mount();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    const std::string sub =
        (*fresh)->mountpoint() + "/OsdKilledAndRestartedDuringWrites";
    EXPECT_EQ(FirstMismatch(sub + "/before", 1, 16 << 20), -1);
    EXPECT_EQ(FirstMismatch(sub + "/across", 2, kSize), -1);
  }

  auto restart = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster->Ctl("start", "osd.1"));
  ASSERT_TRUE(WaitOsdsUp(3, 60)) << cluster->Ceph("osd stat");
  printf("fault: OSD restarted: up again after %.1f s\n",
         SecondsSince(restart));
  // Memstore comes back empty: the data is copied back while a third
  // client reads it.
  auto fresh = Mount();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::string sub =
      (*fresh)->mountpoint() + "/OsdKilledAndRestartedDuringWrites";
  EXPECT_EQ(FirstMismatch(sub + "/before", 1, 16 << 20), -1);
  EXPECT_EQ(FirstMismatch(sub + "/across", 2, kSize), -1);
}

// The only MDS killed (SIGKILL) and started again: a namespace operation
// made during the outage waits, then succeeds once the restarted MDS is
// active (the monitor first has to notice the dead one: mds_beacon_grace,
// 12 s on the test cluster); nothing fails and no data is lost.
TEST_F(CephFaultTest, MdsKilledAndRestartedOperationsResume) {
  const std::string kept = dir_ + "/kept";
  double stall = 0;
  ASSERT_EQ(WritePattern(kept, 3, 4 << 20, 4, &stall), 0);

  auto kill_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster->Ctl("kill", "mds.a"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(cluster->Ctl("start", "mds.a"));

  // Creates (new names: the MDS must answer) until one gets through.
  const std::string dir = dir_;
  double secs = 0;
  int rc = RunBounded(120, &secs, [&] {
    int fd = open((dir + "/during").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return errno;
    int err = write(fd, "x", 1) == 1 ? 0 : errno;
    close(fd);
    return err;
  });
  printf(
      "fault: MDS killed and restarted: a create waited %.1f s "
      "(%.1f s after the kill)\n",
      secs, SecondsSince(kill_at));
  EXPECT_EQ(rc, 0) << (rc > 0 ? strerror(rc) : "killed at the deadline");
  EXPECT_LT(secs, 90);
  struct stat st;
  EXPECT_EQ(stat((dir_ + "/during").c_str(), &st), 0);
  EXPECT_EQ(FirstMismatch(kept, 3, 4 << 20), -1);
}

// The daemon killed (SIGKILL) while the cluster is up: calls into the
// mount fail with ENOTCONN (never hang), its Ceph session is evicted, a new
// daemon mounts the same place, and the data written before is there, read
// from the cluster without waiting on the dead session.
TEST_F(CephFaultTest, DaemonKilledClientsGetEnotconnAndRemountWorks) {
  const std::string file = dir_ + "/f";
  double stall = 0;
  ASSERT_EQ(WritePattern(file, 4, 8 << 20, 4, &stall), 0);
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const pid_t dead = fs_->daemon_pid();
  fs_->KillDaemon(SIGKILL);
  char c;
  EXPECT_EQ(pread(fd, &c, 1, 0), -1);
  EXPECT_EQ(errno, ENOTCONN);
  close(fd);
  struct stat st;
  EXPECT_EQ(stat(file.c_str(), &st), -1);
  EXPECT_EQ(errno, ENOTCONN);

  // The dead session still holds the capabilities it was given for the
  // file until the MDS declares it stale (session_timeout: 60 s by
  // default, measured 65.6 s for the next reader); evicting it, as an
  // operator (or a supervisor restarting the daemon) does, frees them at
  // once.
  auto t = std::chrono::steady_clock::now();
  ASSERT_TRUE(EvictCephSession(cluster->conf, dead));
  printf("fault: daemon killed: its session evicted in %.2f s\n",
         SecondsSince(t));
  t = std::chrono::steady_clock::now();
  ASSERT_TRUE(fs_->Remount().ok());
  printf("fault: daemon killed: remounted in %.2f s\n", SecondsSince(t));
  t = std::chrono::steady_clock::now();
  EXPECT_EQ(FirstMismatch(file, 4, 8 << 20), -1);
  const double first_read = SecondsSince(t);
  printf("fault: daemon killed: the remount's first read took %.1f s\n",
         first_read);
  EXPECT_LT(first_read, 10);
  // The new session may write the file the dead one had open: the old
  // session's capabilities must not block it for long.
  double secs = 0;
  int rc = RunBounded(120, &secs, [&] {
    int wfd = open(file.c_str(), O_WRONLY);
    if (wfd < 0) return errno;
    int err = pwrite(wfd, "y", 1, 0) == 1 && fsync(wfd) == 0 ? 0 : errno;
    close(wfd);
    return err;
  });
  printf("fault: daemon killed: the remount's first write+fsync took %.1f s\n",
         secs);
  EXPECT_EQ(rc, 0) << (rc > 0 ? strerror(rc) : "killed at the deadline");
}

// A client process killed (SIGKILL) in the middle of writing: the mount
// and the file stay usable, and what the file holds is a prefix of what was
// written (whole 1 MiB writes, in order), never other bytes.
TEST_F(CephFaultTest, ClientKilledMidWrite) {
  const std::string file = dir_ + "/f";
  pid_t pid = fork();
  if (pid == 0) {
    double stall = 0;
    _exit(WritePattern(file, 5, 1ull << 30, 1 << 30, &stall));
  }
  // Kill it once a few MiB are in.
  auto start = std::chrono::steady_clock::now();
  struct stat st = {};
  while (SecondsSince(start) < 30 &&
         (stat(file.c_str(), &st) != 0 || st.st_size < (8 << 20))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(stat(file.c_str(), &st), 0) << strerror(errno);
  ASSERT_GE(st.st_size, 8 << 20);
  EXPECT_EQ(FirstMismatch(file, 5, st.st_size), -1);
  // Another client sees the same bytes once the first's are flushed.
  int fd = open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(fsync(fd), 0);
  close(fd);
  auto fresh = Mount();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::string other = (*fresh)->mountpoint() + "/ClientKilledMidWrite/f";
  struct stat st2;
  ASSERT_EQ(stat(other.c_str(), &st2), 0);
  EXPECT_EQ(st2.st_size, st.st_size);
  EXPECT_EQ(FirstMismatch(other, 5, st2.st_size), -1);
}

// The whole cluster stops answering (every daemon SIGSTOPped, as behind a
// network partition) under a live mount, for 8 s: calls that need it wait
// (libcephfs has no per-call timeout, and the gate's, --ceph-timeout, is
// 120 s by default: docs/ceph.md), the daemon stays up, and once the cluster
// answers again every waiting call completes, the data is intact and the
// mount unmounts cleanly.
TEST_F(CephFaultTest, ClusterUnreachableCallsWaitThenComplete) {
  const std::string file = dir_ + "/f";
  double stall = 0;
  ASSERT_EQ(WritePattern(file, 6, 4 << 20, 4, &stall), 0);
  const std::vector<std::string> daemons = {"mon.a", "mgr.x", "mds.a",
                                            "osd.0", "osd.1", "osd.2"};
  for (const std::string& name : daemons) {
    ASSERT_TRUE(cluster->Ctl("pause", name)) << name;
  }
  // A create and a write+fsync, each in a child process of its own.
  const std::string dir = dir_;
  std::atomic<int> create_rc{-2}, fsync_rc{-2};
  std::atomic<double> create_secs{0}, fsync_secs{0};
  std::thread creator([&] {
    double secs = 0;
    create_rc = RunBounded(120, &secs, [&] {
      int fd = open((dir + "/new").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd < 0) return errno;
      close(fd);
      return 0;
    });
    create_secs = secs;
  });
  std::thread writer([&] {
    double secs = 0;
    fsync_rc = RunBounded(120, &secs, [&] {
      int fd = open(file.c_str(), O_WRONLY);
      if (fd < 0) return errno;
      int err = pwrite(fd, "z", 1, 0) == 1 && fsync(fd) == 0 ? 0 : errno;
      close(fd);
      return err;
    });
    fsync_secs = secs;
  });
  std::this_thread::sleep_for(std::chrono::seconds(8));
  EXPECT_EQ(create_rc.load(), -2) << "a create finished with no cluster";
  EXPECT_EQ(kill(fs_->daemon_pid(), 0), 0) << "the daemon died";
  for (const std::string& name : daemons) {
    ASSERT_TRUE(cluster->Ctl("resume", name)) << name;
  }
  creator.join();
  writer.join();
  printf(
      "fault: cluster unreachable for 8 s: a create made during it returned "
      "after %.1f s, a write+fsync after %.1f s\n",
      create_secs.load(), fsync_secs.load());
  EXPECT_EQ(create_rc.load(), 0);
  EXPECT_EQ(fsync_rc.load(), 0);
  std::string want = Pattern(6, 0, 4 << 20);
  want[0] = 'z';
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string got(want.size(), '\0');
  EXPECT_EQ(pread(fd, got.data(), got.size(), 0),
            static_cast<ssize_t>(got.size()));
  close(fd);
  EXPECT_TRUE(got == want) << "the file changed otherwise than written";
  auto t = std::chrono::steady_clock::now();
  EXPECT_TRUE(fs_->Unmount().ok());
  EXPECT_EQ(fs_->last_exit_status(), 0)
      << "the daemon did not exit by itself within 5 s of the unmount";
  printf("fault: cluster back: unmount took %.1f s\n", SecondsSince(t));
}

// The daemon killed (SIGKILL) with a file open for writing and dirty
// data, and restarted on the same mount point with nobody evicting its
// session: the new daemon (the same Ceph client uuid: host and mount
// point) reclaims the dead one's session before it mounts
// (ceph_start_reclaim), so it reads and writes that file at once, instead
// of after the MDS's session_timeout (measured 65.6 s without).
TEST_F(CephFaultTest, DaemonRestartedReclaimsItsSessionWithoutEviction) {
  const std::string file = dir_ + "/f";
  double stall = 0;
  ASSERT_EQ(WritePattern(file, 9, 4 << 20, 4, &stall), 0);
  int fd = open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  // Dirty data in the dead session's cache: it holds the write caps.
  ASSERT_EQ(pwrite(fd, "q", 1, 1 << 20), 1);
  fs_->KillDaemon(SIGKILL);
  close(fd);
  auto t = std::chrono::steady_clock::now();
  ASSERT_TRUE(fs_->Remount().ok());
  printf("fault: daemon restarted without eviction: remounted in %.2f s\n",
         SecondsSince(t));
  double secs = 0;
  int rc = RunBounded(120, &secs, [&] {
    int wfd = open(file.c_str(), O_RDWR);
    if (wfd < 0) return errno;
    char c;
    int err = pread(wfd, &c, 1, 0) == 1 && pwrite(wfd, "y", 1, 0) == 1 &&
                      fsync(wfd) == 0
                  ? 0
                  : errno;
    close(wfd);
    return err;
  });
  printf(
      "fault: daemon restarted without eviction: the first read+write+fsync "
      "took %.1f s\n",
      secs);
  EXPECT_EQ(rc, 0) << (rc > 0 ? strerror(rc) : "killed at the deadline");
  EXPECT_LT(secs, 10) << "the dead session was not reclaimed";
}

// Every daemon of the cluster killed (SIGKILL, by recorded pid) while
// calls of every kind are in flight, and it never comes back: libcephfs 16
// waits forever (measured: > 600 s for a create, a read, an fsync; and
// ceph_abort_conn itself waits for the calls in flight), so the daemon's
// gate (--ceph-timeout, 3 s here) gives up on them: each returns ENOTCONN
// within the timeout and a watchdog period, every later call fails at once,
// and the daemon unmounts and exits cleanly, leaving its stuck threads
// behind: its gate threads, and the FUSE threads of reads that ran on them
// (guarded_backend.h), which a cold reader keeps going to the OSDs; libfuse
// would wait for those at its exit forever (stuck_threads_exit.h). Kills
// the cluster: the last test of the binary.
TEST_F(CephFaultTest, ZzClusterGoneCallsFailWithinTheTimeout) {
  constexpr double kTimeout = 3;
  // A file the next daemon never had: its reads go to the OSDs.
  double cold_stall = 0;
  const uint64_t kColdSize = 128 << 20;
  ASSERT_EQ(WritePattern(dir_ + "/cold", 5, kColdSize, 32, &cold_stall), 0);
  ASSERT_TRUE(fs_->Unmount().ok());
  auto fs = Mount({"--ceph-timeout", "3"});
  ASSERT_TRUE(fs.ok()) << fs.status();
  fs_ = *std::move(fs);
  const std::string dir =
      fs_->mountpoint() + "/" +
      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string file = dir + "/f";
  double stall = 0;
  ASSERT_EQ(WritePattern(file, 7, 4 << 20, 4, &stall), 0);
  // The option reached the backend (its gate's line in the stats).
  int stats_fd = open((fs_->mountpoint() + "/.fgds/stats").c_str(), O_RDONLY);
  ASSERT_GE(stats_fd, 0) << strerror(errno);
  std::string stats(65536, '\0');
  ssize_t n = read(stats_fd, stats.data(), stats.size());
  close(stats_fd);
  ASSERT_GT(n, 0);
  stats.resize(n);
  EXPECT_NE(stats.find("# ceph-gate: timeout_ms=3000 dead=0"),
            std::string::npos)
      << stats;

  // Each loops over its call until one fails, and returns that errno.
  struct Caller {
    const char* what;
    std::function<int()> op;
  };
  const std::vector<Caller> callers = {
      {"write+fsync",
       [&] {
         int fd = open(file.c_str(), O_WRONLY);
         if (fd < 0) return errno;
         std::string data = Pattern(8, 0, 1 << 20);
         for (;;) {
           if (pwrite(fd, data.data(), data.size(), 0) < 0 || fsync(fd) != 0) {
             return errno;
           }
         }
       }},
      {"create",
       [&] {
         for (int i = 0;; ++i) {
           int fd = open(absl::StrCat(dir, "/new", i).c_str(),
                         O_WRONLY | O_CREAT | O_EXCL, 0644);
           if (fd < 0) return errno;
           close(fd);
         }
       }},
      {"read (O_DIRECT)",
       [&] {
         int fd = open(file.c_str(), O_RDONLY | O_DIRECT);
         if (fd < 0) return errno;
         void* buf = nullptr;
         if (posix_memalign(&buf, 4096, 1 << 20) != 0) return ENOMEM;
         for (uint64_t off = 0;; off = (off + (1 << 20)) % (4 << 20)) {
           if (pread(fd, buf, 1 << 20, off) < 0) return errno;
         }
       }},
      {"cold read",
       [&] {
         int fd = open((dir + "/cold").c_str(), O_RDONLY | O_DIRECT);
         if (fd < 0) return errno;
         void* buf = nullptr;
         if (posix_memalign(&buf, 4096, 1 << 20) != 0) return ENOMEM;
         // Each 1 MiB once, in a scattered order: never from a cache.
         for (uint64_t i = 0;; i = (i + 37) % (kColdSize >> 20)) {
           if (pread(fd, buf, 1 << 20, static_cast<off_t>(i << 20)) < 0) {
             return errno;
           }
         }
       }},
      {"usrbio cold reads (batches of 16 x 4 KiB)",
       // One gate submission per batch (docs/ceph.md, "Batches through
       // the gate"): every entry of a batch stuck in the dead cluster is
       // answered ENOTCONN within the timeout, those queued behind too.
       [&]() -> int {
         constexpr unsigned kDepth = 16;
         fgds_session session;
         if (int r = fgds_session_open(&session, dir.c_str(), nullptr)) {
           return -r;
         }
         fgds_iov iov;
         fgds_iov_params iov_params = {};
         iov_params.size = kDepth * 4096;
         iov_params.numa_node = -1;
         if (int r = fgds_iov_create(&session, &iov, &iov_params)) return -r;
         fgds_ior ior;
         fgds_ior_params ior_params = {};
         ior_params.entries = kDepth;
         ior_params.flags = FGDS_IOR_BUFFERED;
         if (int r = fgds_ior_create(&session, &ior, &ior_params)) return -r;
         int fd = open((dir + "/cold").c_str(), O_RDONLY);
         if (fd < 0) return errno;
         const int file_id = fgds_fd_register(&session, fd, 0);
         if (file_id < 0) return -file_id;
         const uint64_t blocks = kColdSize / 4096;
         for (uint64_t next = 0;;) {
           for (unsigned i = 0; i < kDepth; ++i, next += 7919) {
             char* buf = static_cast<char*>(iov.base) + i * 4096;
             if (int r = fgds_prep_io(&ior, &iov, FGDS_OP_READ, 0, buf, file_id,
                                      (next % blocks) * 4096, 4096, i)) {
               return -r;
             }
           }
           if (int r = fgds_ior_submit(&ior); r < 0) return -r;
           fgds_cqe cqes[kDepth];
           for (unsigned got = 0; got < kDepth;) {
             int reaped = fgds_ior_wait(&ior, cqes, kDepth - got, 1, -1);
             if (reaped < 0) return -reaped;
             for (int i = 0; i < reaped; ++i) {
               if (cqes[i].result < 0) return static_cast<int>(-cqes[i].result);
             }
             got += static_cast<unsigned>(reaped);
           }
         }
       }},
      {"statfs",
       [&] {
         for (;;) {
           struct statvfs st;
           if (statvfs(dir.c_str(), &st) != 0) return errno;
         }
       }},
      {"mkdir+rmdir",
       [&] {
         const std::string sub = dir + "/sub";
         for (;;) {
           if (mkdir(sub.c_str(), 0755) != 0 || rmdir(sub.c_str()) != 0) {
             return errno;
           }
         }
       }},
  };
  std::vector<std::thread> threads;
  std::vector<int> rcs(callers.size(), -2);
  std::vector<double> secs(callers.size(), 0);
  const double kBound = kTimeout + 6;  // the watchdog's period, and slack
  for (size_t i = 0; i < callers.size(); ++i) {
    threads.emplace_back(
        [&, i] { rcs[i] = RunBounded(0.5 + kBound, &secs[i], callers[i].op); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto kill_at = std::chrono::steady_clock::now();
  for (const char* name :
       {"mds.a", "osd.0", "osd.1", "osd.2", "mgr.x", "mon.a"}) {
    ASSERT_TRUE(cluster->Ctl("kill", name)) << name;
  }
  for (std::thread& t : threads) t.join();
  const double after_kill = SecondsSince(kill_at);
  for (size_t i = 0; i < callers.size(); ++i) {
    printf(
        "fault: cluster gone (--ceph-timeout 3): %s returned %s %.1f s "
        "after it started\n",
        callers[i].what, rcs[i] > 0 ? strerror(rcs[i]) : "nothing", secs[i]);
    EXPECT_EQ(rcs[i], ENOTCONN)
        << callers[i].what << ": "
        << (rcs[i] == -1  ? "still waiting at the deadline"
            : rcs[i] == 0 ? "no error"
                          : strerror(rcs[i]));
  }
  printf("fault: cluster gone: every call back %.1f s after the kill\n",
         after_kill);
  EXPECT_LT(after_kill, kBound);
  // Later calls fail at once, without asking the cluster.
  auto t = std::chrono::steady_clock::now();
  struct stat st;
  EXPECT_EQ(stat((dir + "/other").c_str(), &st), -1);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_LT(SecondsSince(t), 1.0);
  // The unmount ends the daemon, which exits by itself with status 0
  // (its threads stuck in libcephfs are left behind).
  t = std::chrono::steady_clock::now();
  EXPECT_TRUE(fs_->Unmount().ok());
  EXPECT_EQ(fs_->last_exit_status(), 0)
      << "the daemon did not exit by itself within 5 s of the unmount";
  printf("fault: cluster gone: unmount took %.1f s\n", SecondsSince(t));
}

}  // namespace
}  // namespace fgds::testing
