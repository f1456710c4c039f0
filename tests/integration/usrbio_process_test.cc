// usrbio across processes and users: many clients at once, a client killed
// mid-I/O (the daemon must drop its session without leaking descriptors or
// mappings), isolation between users, and a daemon killed under a waiting
// client.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/usrbio_harness.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Runs `body` in a child process and returns its exit status (the body's
// return value; 100+ for a crash or signal).
template <typename Body>
int RunChild(Body body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// Lines of /proc/<pid>/maps naming a usrbio memfd.
int CountUsrbioMappings(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:fgds-") != std::string::npos) ++n;
  }
  return n;
}

// Polls `done` until it holds or 20 s passed; the daemon releases a dead
// client's session asynchronously, after its in-flight I/O.
template <typename Done>
bool Eventually(Done done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// One client's whole life: its own file, mixed aligned and unaligned writes,
// read back through the ring and verified. Returns 0 or a step number.
int ClientWriteReadVerify(const std::string& mnt, const std::string& name,
                          uint64_t seed) {
  Session s(mnt);
  if (s.open_result != 0) return 1;
  Iov iov(&s.s, 8 * kMiB);
  Ior ior(&s.s);
  if (iov.result != 0 || ior.result != 0) return 2;
  int fd = open((mnt + "/" + name).c_str(), O_CREAT | O_RDWR, 0644);
  int id = fgds_fd_register(&s.s, fd, 0);
  close(fd);
  if (id < 0) return 3;
  const uint64_t size = 4 * kMiB;
  FillPattern(iov.at(0), size, seed, 0);
  std::vector<fgds_cqe> cqes(256);
  unsigned n = 0;
  for (uint64_t off = 0; off < size; ++n) {
    uint64_t len = std::min<uint64_t>(n % 3 ? 65536 : 40000 + n, size - off);
    if (fgds_prep_write(&ior.ior, &iov.iov, iov.at(off), id, off, len, len) !=
        0) {
      return 4;
    }
    off += len;
  }
  if (SubmitAndWaitAll(&ior.ior, cqes.data(), n) != static_cast<int>(n)) {
    return 5;
  }
  for (unsigned i = 0; i < n; ++i) {
    if (cqes[i].result != static_cast<int64_t>(cqes[i].userdata)) return 6;
  }
  for (uint64_t off = 0; off < size; off += kMiB) {
    if (fgds_prep_read(&ior.ior, &iov.iov, iov.at(size + off), id, off, kMiB,
                       0) != 0) {
      return 7;
    }
  }
  if (SubmitAndWaitAll(&ior.ior, cqes.data(), 4) != 4) return 8;
  for (int i = 0; i < 4; ++i) {
    if (cqes[i].result != static_cast<int64_t>(kMiB)) return 9;
  }
  return MatchesPattern(iov.at(size), size, seed, 0) ? 0 : 10;
}

TEST_F(UsrbioTest, ManyProcessesAtOnce) {
  constexpr int kClients = 4;
  std::vector<pid_t> pids;
  const std::string mnt = fs_->mountpoint();
  for (int i = 0; i < kClients; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      _exit(ClientWriteReadVerify(mnt, "client" + std::to_string(i), 100 + i));
    }
    pids.push_back(pid);
  }
  for (int i = 0; i < kClients; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "client " << i;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "client " << i << " failed a step";
  }
  // Each file holds its own client's data (no cross-talk between sessions).
  for (int i = 0; i < kClients; ++i) {
    std::vector<char> data(4 * kMiB);
    int fd = open(Backing("client" + std::to_string(i)).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pread(fd, data.data(), data.size(), 0),
              static_cast<ssize_t>(data.size()));
    close(fd);
    EXPECT_TRUE(MatchesPattern(data.data(), data.size(), 100 + i, 0)) << i;
  }
}

TEST_F(UsrbioTest, KilledClientLeavesNothingBehind) {
  // A file for the victim to read in a loop.
  {
    std::vector<char> data(16 * kMiB, 'x');
    int fd = open(Mnt("big").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    close(fd);
  }
  const pid_t daemon = fs_->daemon_pid();
  // Session descriptors before the victim. Releases of earlier files (the
  // one just written) are asynchronous, so the count may still drop: the
  // check below is "nothing above this", not "exactly this".
  const std::string backing = fs_->backing();
  const size_t fds_before = SessionFds(daemon, backing).size();
  ASSERT_GT(fds_before, 0u);  // at least the listening socket

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const std::string mnt = fs_->mountpoint();
  pid_t victim = fork();
  if (victim == 0) {
    close(ready[0]);
    Session s(mnt);
    Iov iov(&s.s, 16 * kMiB);
    fgds_ior_params p = {};
    p.entries = 64;
    Ior ior(&s.s, &p);
    int fd = open((mnt + "/big").c_str(), O_RDONLY);
    int id = fgds_fd_register(&s.s, fd, 0);
    if (s.open_result || iov.result || ior.result || id < 0) _exit(1);
    bool told = false;
    fgds_cqe cqes[64];
    // Keep the ring full of 1 MiB reads until killed.
    for (uint64_t n = 0;; ++n) {
      while (fgds_prep_read(&ior.ior, &iov.iov, iov.at((n % 16) * kMiB), id,
                            (n % 16) * kMiB, kMiB, n) == 0) {
        ++n;
      }
      fgds_ior_submit(&ior.ior);
      if (fgds_ior_wait(&ior.ior, cqes, 64, 1, -1) < 0) _exit(2);
      if (!told) {
        told = write(ready[1], "r", 1) == 1;
      }
    }
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the victim never got going";
  close(ready[0]);
  // The daemon maps the victim's memory and holds its session's descriptors.
  EXPECT_GT(CountUsrbioMappings(daemon), 0);
  EXPECT_GT(SessionFds(daemon, backing).size(), fds_before);
  kill(victim, SIGKILL);
  int status = 0;
  waitpid(victim, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  EXPECT_TRUE(Eventually([&] {
    return SessionFds(daemon, backing).size() <= fds_before;
  })) << "daemon descriptors now: "
      << Join(SessionFds(daemon, backing)) << "; there were " << fds_before
      << " before the victim";
  EXPECT_TRUE(Eventually([&] { return CountUsrbioMappings(daemon) == 0; }))
      << CountUsrbioMappings(daemon) << " usrbio mappings left";
  // And the daemon still serves new sessions.
  EXPECT_EQ(RunChild([&] { return ClientWriteReadVerify(mnt, "after", 42); }),
            0);
}

// What the daemon's io_urings hold registered (their /proc fdinfo): files
// whose path contains `backing`, and buffers. The ring workers register the
// files and iovs of cached reads (backend/local/nowait_reader.h).
struct Registered {
  int files = 0;
  int buffers = 0;
};
Registered RegisteredInDaemon(pid_t pid, const std::string& backing) {
  Registered r;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(dir + "/fd", ec)) {
    std::error_code link_ec;
    const auto target = std::filesystem::read_symlink(entry.path(), link_ec);
    if (link_ec || target.string() != "anon_inode:[io_uring]") continue;
    std::ifstream info(dir + "/fdinfo/" + entry.path().filename().string());
    enum { kOther, kFiles, kBufs } section = kOther;
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("UserFiles:", 0) == 0) {
        section = kFiles;
      } else if (line.rfind("UserBufs:", 0) == 0) {
        section = kBufs;
      } else if (!line.empty() && line[0] != ' ') {
        section = kOther;  // the next section's header
      } else if (section == kFiles && line.find(backing) != std::string::npos) {
        ++r.files;
      } else if (section == kBufs && line.find("0x") != std::string::npos) {
        ++r.buffers;
      }
    }
  }
  return r;
}

// The fixed-path tests' file: 4 MiB of a pattern, read in 4 KiB blocks.
constexpr uint64_t kFixedFileSize = 4 * kMiB;
constexpr uint64_t kFixedBlock = 4096;

// Writes the fixed-path file at `path` (through the mount), pattern `seed`.
bool WriteFixedPathFile(const std::string& path, uint64_t seed) {
  std::vector<char> data(kFixedFileSize);
  FillPattern(data.data(), data.size(), seed, 0);
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  if (fd < 0) return false;
  const bool written =
      write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  return close(fd) == 0 && written;
}

// The file offset of a fixed-path client's `n`th read: 7919 is prime to
// the block count, so each run of that many reads meets every block once,
// out of order.
uint64_t FixedPathOffset(uint64_t n) {
  return ((n * 7919) % (kFixedFileSize / kFixedBlock)) * kFixedBlock;
}

// A client whose cached 4 KiB reads of the fixed-path file `name` go
// through the ring workers' fixed files and buffers: a 1 MiB iov, a ring
// through the page cache (O_DIRECT reads never take the inline path) of
// `entries` slots (0: the default), and the file registered read-only.
// For a child process: the session is its own.
struct FixedPathClient {
  FixedPathClient(const std::string& mnt, const std::string& name,
                  uint32_t entries = 0)
      : session(mnt),
        iov(&session.s, kMiB),
        params(BufferedRing(entries)),
        ior(&session.s, &params),
        id(RegisterPath(&session.s, mnt + "/" + name, O_RDONLY)) {}
  static fgds_ior_params BufferedRing(uint32_t entries) {
    fgds_ior_params p = {};
    p.entries = entries;
    p.flags = FGDS_IOR_BUFFERED;
    return p;
  }
  bool ok() const {
    return session.open_result == 0 && iov.result == 0 && ior.result == 0 &&
           id >= 0;
  }

  Session session;
  Iov iov;
  fgds_ior_params params;
  Ior ior;
  int id;
};

// Reads every block of the fixed-path file twice through `client`, 32 at a
// time, and checks each against pattern `seed`: the second pass finds the
// pages cached and goes through the fixed tables. The iov's first 32
// blocks are zeroed before each batch, so a read whose bytes land anywhere
// else (a dead client's pinned pages) shows. Returns 0 or a step number
// (2 to 5).
int ReadEveryBlockTwice(FixedPathClient& client, uint64_t seed) {
  constexpr uint64_t kBatch = 32;
  std::vector<fgds_cqe> cqes(kBatch);
  for (uint64_t round = 0; round < 2 * kFixedFileSize / kFixedBlock / kBatch;
       ++round) {
    memset(client.iov.at(0), 0, kBatch * kFixedBlock);
    for (uint64_t i = 0; i < kBatch; ++i) {
      if (fgds_prep_read(&client.ior.ior, &client.iov.iov,
                         client.iov.at(i * kFixedBlock), client.id,
                         FixedPathOffset(round * kBatch + i), kFixedBlock,
                         i) != 0) {
        return 2;
      }
    }
    if (SubmitAndWaitAll(&client.ior.ior, cqes.data(), kBatch) !=
        static_cast<int>(kBatch)) {
      return 3;
    }
    for (const fgds_cqe& cqe : cqes) {
      if (cqe.result != static_cast<int64_t>(kFixedBlock)) return 4;
    }
    for (uint64_t i = 0; i < kBatch; ++i) {
      if (!MatchesPattern(client.iov.at(i * kFixedBlock), kFixedBlock, seed,
                          FixedPathOffset(round * kBatch + i))) {
        return 5;
      }
    }
  }
  return 0;
}

TEST_F(UsrbioTest, KilledClientOnTheFixedPathLeavesNothingRegistered) {
  // The hostile case of the fixed files and buffers: a client whose cached
  // 4 KiB reads go through the ring workers' registered file and buffer
  // tables is killed with its ring full. Its file and its iov's pinned
  // pages must go from every table (not stay held by an idle worker), and
  // the next client, whose iov the daemon may well map at the dead one's
  // address, must get its own bytes, not have them copied into the dead
  // client's pinned pages.
  if (TestingCeph()) {
    GTEST_SKIP() << "the fixed tables are the local backend's";
  }
  constexpr uint64_t kSeed = 77;
  ASSERT_TRUE(WriteFixedPathFile(Mnt("small"), kSeed));
  const pid_t daemon = fs_->daemon_pid();
  const std::string backing = fs_->backing();
  const std::string mnt = fs_->mountpoint();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t victim = fork();
  if (victim == 0) {
    close(ready[0]);
    FixedPathClient client(mnt, "small", 64);
    if (!client.ok()) _exit(1);
    fgds_cqe cqes[64];
    uint64_t done = 0;
    bool told = false;
    // 4 KiB reads all over the file, the ring kept full, until killed
    // (after the first pass the pages are cached: the inline path).
    for (uint64_t n = 0;; ++n) {
      while (fgds_prep_read(&client.ior.ior, &client.iov.iov,
                            client.iov.at((n % 256) * kFixedBlock), client.id,
                            FixedPathOffset(n), kFixedBlock, n) == 0) {
        ++n;
      }
      fgds_ior_submit(&client.ior.ior);
      const int got = fgds_ior_wait(&client.ior.ior, cqes, 64, 1, -1);
      if (got < 0) _exit(2);
      for (int i = 0; i < got; ++i) {
        if (cqes[i].result != static_cast<int64_t>(kFixedBlock)) _exit(3);
      }
      done += static_cast<uint64_t>(got);
      if (!told && done > 20000) told = write(ready[1], "r", 1) == 1;
    }
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the victim never got going";
  close(ready[0]);
  // While it runs, its file and iov are in a worker's tables (otherwise
  // this test would not exercise the fixed path at all).
  EXPECT_TRUE(Eventually([&] {
    const Registered r = RegisteredInDaemon(daemon, backing);
    return r.files > 0 && r.buffers > 0;
  })) << "the victim's reads never went through fixed files and buffers";
  kill(victim, SIGKILL);
  int status = 0;
  waitpid(victim, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "victim exited " << status;

  Registered left;
  EXPECT_TRUE(Eventually([&] {
    left = RegisteredInDaemon(daemon, backing);
    return left.files == 0 && left.buffers == 0;
  })) << left.files
      << " files and " << left.buffers
      << " buffers still registered after the client died";
  EXPECT_TRUE(Eventually([&] { return CountUsrbioMappings(daemon) == 0; }))
      << CountUsrbioMappings(daemon) << " usrbio mappings left";
  // The next client: the same reads, each checked against the file.
  EXPECT_EQ(RunChild([&] {
              FixedPathClient client(mnt, "small");
              return client.ok() ? ReadEveryBlockTwice(client, kSeed) : 1;
            }),
            0);
}

TEST_F(UsrbioTest, AnUnlinkedFileReadOnTheFixedPathIsClosedOnceTheTablesLetGo) {
  // A file a client read through the ring workers' fixed tables, then
  // unlinked and let go of: the daemon's descriptor of it outlives the
  // client's registration only while a worker's table holds the file, and
  // is then closed (off the ring workers: backend/registration_key.h;
  // which thread closes is nowait_fixed_test's). Nothing of it may stay:
  // no descriptor of the deleted file, no table entry.
  if (TestingCeph()) {
    GTEST_SKIP() << "the fixed tables are the local backend's";
  }
  constexpr uint64_t kSeed = 5;
  ASSERT_TRUE(WriteFixedPathFile(Mnt("gone"), kSeed));
  const pid_t daemon = fs_->daemon_pid();
  const std::string backing = fs_->backing();
  const std::string mnt = fs_->mountpoint();
  // The daemon's descriptors of the file, deleted or not.
  auto open_in_daemon = [&] {
    int n = 0;
    for (const std::string& t : SessionFds(daemon, backing)) {
      n += t.find(backing + "/gone") != std::string::npos;
    }
    return n;
  };
  EXPECT_EQ(RunChild([&] {
              FixedPathClient client(mnt, "gone");
              if (!client.ok()) return 1;
              // The second pass goes through the fixed tables.
              if (int step = ReadEveryBlockTwice(client, kSeed)) return step;
              if (unlink((mnt + "/gone").c_str()) != 0) return 6;
              return 0;  // the session closes: the registration goes
            }),
            0);
  Registered left;
  EXPECT_TRUE(Eventually([&] {
    left = RegisteredInDaemon(daemon, backing);
    return left.files == 0 && open_in_daemon() == 0;
  })) << open_in_daemon()
      << " descriptors of the deleted file and " << left.files
      << " table entries left";
}

TEST_F(UsrbioTest, OtherUserCannotReachFirstUsersIovOrFd) {
  constexpr uid_t kNobody = 65534;
  // User A (root here): a private file, a shared one, two iovs, both files
  // registered.
  {
    int fd = open(Mnt("secret").c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_EQ(write(fd, "secret data", 11), 11);
    close(fd);
    fd = open(Mnt("shared").c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_EQ(write(fd, std::string(8192, 's').data(), 8192), 8192);
    close(fd);
  }
  Session a(fs_->mountpoint());
  ASSERT_EQ(a.open_result, 0);
  Iov a_iov0(&a.s, 65536);
  Iov a_iov1(&a.s, 65536);
  ASSERT_EQ(a_iov1.result, 0);
  ASSERT_EQ(a_iov1.iov.id, 1u);
  int fd = open(Mnt("secret").c_str(), O_RDWR);
  ASSERT_EQ(fgds_fd_register(&a.s, fd, 0), 0);
  close(fd);
  fd = open(Mnt("shared").c_str(), O_RDWR);
  ASSERT_EQ(fgds_fd_register(&a.s, fd, 0), 1);
  close(fd);

  const std::string mnt = fs_->mountpoint();
  // Each step returns a distinct code so a failure names itself.
  int result = RunChild([&]() -> int {
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) return 1;
    if (open((mnt + "/secret").c_str(), O_RDONLY) >= 0) return 2;
    Session b(mnt);
    if (b.open_result != 0) return 3;
    Iov iov(&b.s, 65536);
    Ior ior(&b.s);
    if (iov.result != 0 || ior.result != 0 || iov.iov.id != 0) return 4;
    // A's ids mean nothing in B's session: iov 1 and files 0 and 1 do not
    // exist here.
    fgds_iov a_id = iov.iov;
    a_id.id = 1;
    fgds_prep_read(&ior.ior, &a_id, iov.at(0), 0, 0, 11, 1);
    fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), 0, 0, 11, 2);
    fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), 1, 0, 4096, 3);
    fgds_cqe cqes[3];
    if (SubmitAndWaitAll(&ior.ior, cqes, 3) != 3) return 5;
    for (const fgds_cqe& c : cqes) {
      if (c.userdata == 1 && c.result != -EINVAL) return 6;
      if (c.userdata == 2 && c.result != -EBADF) return 7;
      if (c.userdata == 3 && c.result != -EBADF) return 8;
    }
    // B may read what it may open, and only with the mode it opened.
    int shared = open((mnt + "/shared").c_str(), O_RDONLY);
    int id = fgds_fd_register(&b.s, shared, 0);
    close(shared);
    if (id != 0) return 9;
    fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id, 0, 4096, 4);
    fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, 8192, 5);
    if (SubmitAndWaitAll(&ior.ior, cqes, 2) != 2) return 10;
    for (int i = 0; i < 2; ++i) {
      if (cqes[i].userdata == 4 && cqes[i].result != -EACCES) return 11;
      if (cqes[i].userdata == 5 && cqes[i].result != 8192) return 12;
    }
    // Nothing of the secret reached B's memory.
    if (memmem(iov.at(0), 65536, "secret", 6) != nullptr) return 13;
    return 0;
  });
  EXPECT_EQ(result, 0) << "step " << result << " of the other user failed";
  // A's file is untouched.
  char buf[11];
  fd = open(Backing("secret").c_str(), O_RDONLY);
  ASSERT_EQ(read(fd, buf, 11), 11);
  close(fd);
  EXPECT_EQ(std::string(buf, 11), "secret data");
}

TEST_F(UsrbioTest, DaemonKilledUnderAWaitingClientGivesEnotconn) {
  {
    int fd = open(Mnt("f").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_EQ(write(fd, std::string(4096, 'f').data(), 4096), 4096);
    close(fd);
  }
  Session s(fs_->mountpoint());
  ASSERT_EQ(s.open_result, 0);
  Iov iov(&s.s, 65536);
  // The daemon holds a partial batch for 60 s: only its death can end the
  // wait below early, and the result tells which happened.
  fgds_ior_params p = {};
  p.entries = 64;
  p.io_depth = 64;
  p.timeout_us = 60 * 1000 * 1000;
  Ior ior(&s.s, &p);
  ASSERT_EQ(ior.result, 0);
  int id = RegisterPath(&s.s, Mnt("f"), O_RDONLY);
  ASSERT_GE(id, 0);
  ASSERT_EQ(fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, 4096, 1), 0);
  ASSERT_EQ(fgds_ior_submit(&ior.ior), 1);
  int wait_result = 0;
  std::thread waiter([&] {
    fgds_cqe cqe;
    wait_result = fgds_ior_wait(&ior.ior, &cqe, 1, 1, -1);
  });
  // Give the waiter time to block (the result does not depend on it).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  fs_->KillDaemon(SIGKILL);
  waiter.join();
  EXPECT_EQ(wait_result, -ENOTCONN);
  // Registration calls fail cleanly too.
  EXPECT_LT(fgds_fd_unregister(&s.s, id), 0);
  // MountedFs leaves a dead daemon's mount behind (its statfs check fails
  // with ENOTCONN and the daemon is already reaped): detach it here.
  umount2(fs_->mountpoint().c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace fgds::testing
