// Per-user usrbio limits and who pays for shared memory (docs/limits.md),
// attacked as real unprivileged users (tests/lib/test_users.h) against a
// real mount: bob tries to exhaust the daemon, and the daemon must refuse
// him with an errno naming the limit while alice (and an ordinary read
// through the mount) keeps working.
//
// Each attacker runs in a forked child that drops to its user; its outcome
// comes back through a pipe. A "held" child keeps what it took until the
// test releases it, so alice is checked while bob is at his limit.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fgds/usrbio.h"
#include "fgds/usrbio_wire.h"
#include "gtest/gtest.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/proc_status.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

// What an attacker's child reports.
struct Outcome {
  int32_t result = 0;       // the errno (negative) that stopped it, or 0
  uint32_t limit = 0;       // FGDS_LIMIT_* of that refusal
  int64_t count = 0;        // how many it got before the refusal
  int32_t other = 0;        // a second result, per test
  int32_t killed_by = 0;    // the signal that ended the child, or 0
  char describe[160] = {};  // fgds_limit_describe(limit)
};

void SetDescribe(Outcome* o) {
  snprintf(o->describe, sizeof(o->describe), "%s",
           fgds_limit_describe(o->limit));
}

// A child running as `user`: `as_root` runs first (raising limits, joining
// a cgroup), then `body`, whose Outcome is sent back; the child then waits
// until Release.
class Held {
 public:
  Held(const TestUser& user, const std::function<Outcome()>& body,
       const std::function<void()>& as_root = {}) {
    int out[2], hold[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      // Only our two pipe ends: a copy of another Held's release end
      // would keep that child from ever seeing its release.
      for (int fd = 3; fd < 65536; ++fd) {
        if (fd != out[1] && fd != hold[0]) close(fd);
      }
      if (as_root) as_root();
      if (BecomeUser(user) != 0) _exit(126);
      Outcome o = body();
      (void)!write(out[1], &o, sizeof(o));
      char byte;
      (void)!read(hold[0], &byte, 1);  // until the parent releases us
      _exit(0);
    }
    close(out[1]);
    close(hold[0]);
    release_ = hold[1];
    // The body's outcome, or end of file if it died first.
    pollfd p = {out[0], POLLIN, 0};
    if (poll(&p, 1, 60000) == 1 && read(out[0], &outcome_, sizeof(outcome_)) ==
                                       static_cast<ssize_t>(sizeof(outcome_))) {
      got_ = true;
    }
    close(out[0]);
    if (!got_) Release();
  }
  ~Held() { Release(); }

  // Ends the child (it drops everything it holds) and reaps it.
  void Release() {
    if (release_ >= 0) close(release_);
    release_ = -1;
    if (pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      if (WIFSIGNALED(status)) outcome_.killed_by = WTERMSIG(status);
      if (WIFEXITED(status) && WEXITSTATUS(status) == 126) {
        ADD_FAILURE() << "could not become the test user";
      }
      pid_ = -1;
    }
  }
  bool got() const { return got_; }
  const Outcome& outcome() const { return outcome_; }

 private:
  pid_t pid_ = -1;
  int release_ = -1;
  bool got_ = false;
  Outcome outcome_;
};

void RaiseFileLimit(rlim_t n) {
  rlimit r = {n, n};
  setrlimit(RLIMIT_NOFILE, &r);
}

uint64_t ReadNumber(const std::string& path) {
  std::ifstream in(path);
  uint64_t n = 0;
  in >> n;
  return n;
}

// The session socket's path, from <mount>/.fgds/session.
std::string SocketPath(const std::string& mnt) {
  std::ifstream in(mnt + "/.fgds/session");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("socket=", 0) == 0) return line.substr(7);
  }
  return "";
}

int ConnectRaw(const std::string& path) {
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.data(), path.size());
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return -errno;
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(sock);
    return -err;
  }
  return sock;
}

// Sends IOV_REGISTER for `memfd` of `size` bytes over an open session's
// socket (what the library would send, but for memory it would never
// send) and returns the reply.
fgds_msg_reply RawIovRegister(fgds_session* s, int memfd, uint64_t size) {
  unsigned char msg[sizeof(fgds_msg_header) + sizeof(fgds_msg_iov_register)];
  fgds_msg_header h = {};
  h.magic = FGDS_WIRE_MAGIC;
  h.version = FGDS_WIRE_VERSION;
  h.type = FGDS_MSG_IOV_REGISTER;
  h.length = sizeof(msg);
  h.seq = 0x5EED;
  fgds_msg_iov_register body = {};
  body.size = size;
  memcpy(msg, &h, sizeof(h));
  memcpy(msg + sizeof(h), &body, sizeof(body));
  iovec iov = {msg, sizeof(msg)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
  fgds_msg_reply reply = {};
  reply.result = INT32_MIN;
  if (sendmsg(s->sock, &mh, MSG_NOSIGNAL) != sizeof(msg)) return reply;
  unsigned char in[FGDS_WIRE_MAX_MESSAGE];
  if (recv(s->sock, in, sizeof(in), 0) !=
      static_cast<ssize_t>(sizeof(fgds_msg_header) + sizeof(reply))) {
    return reply;
  }
  memcpy(&reply, in + sizeof(fgds_msg_header), sizeof(reply));
  return reply;
}

// A memfd of `size` bytes sealed against shrinking, with no page
// allocated.
int SparseMemfd(uint64_t size) {
  int fd = memfd_create("sparse", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class UsrbioLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto alice = EnsureTestUser(kAlice);
    ASSERT_TRUE(alice.ok()) << alice.status();
    auto bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    alice_ = *alice;
    bob_ = *bob;
  }
  void Mount(const std::vector<std::string>& args = {}) {
    MountOptions options;
    options.extra_args = args;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    mnt_ = fs_->mountpoint();
    // A file everyone may read, for alice's checks.
    const std::string path = mnt_ + "/shared";
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<char> data(kFileSize);
    FillPattern(data.data(), data.size(), 7, 0);
    ASSERT_EQ(write(fd, data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
    close(fd);
  }

  // Alice, while bob holds what he took: a usrbio session that reads the
  // shared file through a ring, and a plain read(2) through the mount
  // (what `cat` does). 0, or the first failure.
  Outcome AliceStillWorks() {
    const std::string mnt = mnt_;
    Held alice(alice_, [mnt] {
      Outcome o;
      // A plain read through the mount, as cat does.
      int fd = open((mnt + "/shared").c_str(), O_RDONLY | O_CLOEXEC);
      std::vector<char> buf(kFileSize);
      if (fd < 0 || read(fd, buf.data(), buf.size()) != kFileSize ||
          !MatchesPattern(buf.data(), kFileSize, 7, 0)) {
        o.result = -EIO;
        o.other = 1;
        return o;
      }
      close(fd);
      Session s(mnt);
      if (s.open_result != 0) {
        o.result = s.open_result;
        o.limit = s.s.last_limit;
        SetDescribe(&o);
        o.other = 2;
        return o;
      }
      Iov iov(&s.s, kFileSize);
      Ior ior(&s.s);
      if (iov.result != 0 || ior.result != 0) {
        o.result = iov.result != 0 ? iov.result : ior.result;
        o.limit = s.s.last_limit;
        o.other = 3;
        return o;
      }
      int id = RegisterPath(&s.s, mnt + "/shared", O_RDONLY);
      fgds_cqe cqe = {};
      if (id < 0 ||
          fgds_prep_read(&ior.ior, &iov.iov, iov.iov.base, id, 0, kFileSize,
                         1) != 0 ||
          SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1 || cqe.result != kFileSize ||
          !MatchesPattern(iov.at(0), kFileSize, 7, 0)) {
        o.result = id < 0 ? id : -EIO;
        o.other = 4;
        return o;
      }
      return o;
    });
    EXPECT_TRUE(alice.got());
    return alice.outcome();
  }

  bool DaemonAlive() const { return kill(fs_->daemon_pid(), 0) == 0; }

  static constexpr int kFileSize = 64 * 1024;
  TestUser alice_;
  TestUser bob_;
  std::unique_ptr<MountedFs> fs_;
  std::string mnt_;
};

// Issue 12: 1,024 idle connections of one user took every session slot and
// the next user's fgds_session_open failed with a misleading error.
TEST_F(UsrbioLimitsTest, IdleConnectionsOfOneUserLeaveSessionsForOthers) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  const std::string mnt = mnt_;
  const std::string socket_path = SocketPath(mnt);
  ASSERT_FALSE(socket_path.empty());
  std::vector<int> conns;
  Held bob(
      bob_,
      [&] {
        Outcome o;
        // More idle connections (never a HELLO) than the daemon has
        // session slots in all.
        for (int i = 0; i < 1100; ++i) {
          int sock = ConnectRaw(socket_path);
          if (sock < 0) {
            o.other = sock;
            break;
          }
          conns.push_back(sock);
        }
        o.count = static_cast<int64_t>(conns.size());
        // Bob's own next session says which limit stops him.
        Session s(mnt);
        o.result = s.open_result;
        o.limit = s.s.last_limit;
        SetDescribe(&o);
        return o;
      },
      [] { RaiseFileLimit(4096); });
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().count, 1100) << bob.outcome().other;
  EXPECT_EQ(bob.outcome().result, -EDQUOT);
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_SESSIONS);
  EXPECT_NE(std::string(bob.outcome().describe).find("--user-sessions"),
            std::string::npos)
      << bob.outcome().describe;
  const Outcome alice = AliceStillWorks();
  EXPECT_EQ(alice.result, 0)
      << "step " << alice.other << ": " << alice.describe;
  bob.Release();
  EXPECT_TRUE(DaemonAlive());
}

// Issue 12: one 4 KiB memfd iov registered about 65,000 times reached the
// daemon's vm.max_map_count, and the next session aborted the daemon.
TEST_F(UsrbioLimitsTest, MappingsOfOneUserStopAtHisLimit) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  uint64_t max_map_count = ReadNumber("/proc/sys/vm/max_map_count");
  if (max_map_count == 0) max_map_count = 65530;
  const int64_t expected =
      static_cast<int64_t>(std::max<uint64_t>(64, max_map_count / 2 / 8));
  const std::string mnt = mnt_;
  std::vector<Session*> sessions;
  std::vector<Iov*> iovs;
  Held bob(
      bob_,
      [&] {
        Outcome o;
        while (o.count < 70000) {
          auto* s = new Session(mnt);  // held until the child exits
          if (s->open_result != 0) {
            o.result = s->open_result;
            o.limit = s->s.last_limit;
            break;
          }
          sessions.push_back(s);
          for (;;) {
            auto* iov = new Iov(&s->s, 4096);
            if (iov->result != 0) {
              o.result = iov->result;
              o.limit = s->s.last_limit;
              break;
            }
            // Bob keeps only the daemon's registration (as a raw client
            // would): his own mapping and descriptor would run into his
            // own process's limits long before the daemon's.
            munmap(iov->iov.base, iov->iov.size);
            close(iov->iov.memfd);
            iovs.push_back(iov);
            ++o.count;
          }
          // A session's own iov table is full (ENOSPC): another session
          // goes on, as an attacker would.
          if (o.result != -ENOSPC) break;
        }
        SetDescribe(&o);
        return o;
      },
      [] { RaiseFileLimit(4096); });
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().result, -EDQUOT) << bob.outcome().describe;
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_MAPPINGS);
  EXPECT_EQ(bob.outcome().count, expected);
  EXPECT_NE(std::string(bob.outcome().describe).find("--user-mappings"),
            std::string::npos);
  EXPECT_TRUE(DaemonAlive());
  const Outcome alice = AliceStillWorks();
  EXPECT_EQ(alice.result, 0)
      << "step " << alice.other << ": " << alice.describe;
  bob.Release();
  EXPECT_TRUE(DaemonAlive());
}

// Registers the mount's shared file over and over, `per_session` times in
// each of as many sessions as it takes, until refused or `most` are held
// (held until the child exits).
Outcome RegisterUntilRefused(const std::string& mnt, int per_session,
                             int64_t most) {
  Outcome o;
  while (o.count < most && o.result == 0) {
    auto* s = new Session(mnt);  // held until the child exits
    if (s->open_result != 0) {
      o.result = s->open_result;
      o.limit = s->s.last_limit;
      break;
    }
    for (int i = 0; i < per_session && o.count < most; ++i) {
      const int id = RegisterPath(&s->s, mnt + "/shared", O_RDONLY);
      if (id < 0) {
        o.result = id;
        o.limit = s->s.last_limit;
        break;
      }
      ++o.count;
    }
  }
  SetDescribe(&o);
  return o;
}

// Runs `registers` as `user` until it gets `count` files: what an earlier
// holder ended is given back as the daemon tears his sessions down, which
// takes a moment (up to 5 s here). The last outcome, whatever it was.
Outcome OnceGivenBack(const TestUser& user,
                      const std::function<Outcome()>& registers,
                      int64_t count) {
  Outcome last;
  for (int attempt = 0; attempt < 50; ++attempt) {
    Held held(user, registers);
    if (!held.got()) {
      ADD_FAILURE() << "the registering child gave no outcome";
      break;
    }
    last = held.outcome();
    if (last.count == count) break;
    held.Release();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

// The soft RLIMIT_NOFILE of process `pid` (/proc/<pid>/limits), or 0.
uint64_t FdLimitOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) == 0) {
      return std::stoull(line.substr(strlen("Max open files")));
    }
  }
  return 0;
}

// Issue 12: each registered file holds daemon descriptors (the backend's
// file and its O_DIRECT twin), and a session could hold 65,536 files and a
// user many sessions, so one user could take every descriptor of the
// daemon (EMFILE for everyone). Bob registers files over several sessions
// until refused with EDQUOT naming his limit; alice still opens files
// through the mount and registers her own; bob's charges come back when
// his sessions end.
TEST_F(UsrbioLimitsTest, RegisteredFilesOfOneUserStopAtHisLimit) {
  constexpr int64_t kUserFiles = 40;
  ASSERT_NO_FATAL_FAILURE(Mount({"--user-files", std::to_string(kUserFiles)}));
  const std::string mnt = mnt_;
  // Fewer per session than the limit, so that the sessions add up.
  auto bob_registers = [mnt] { return RegisterUntilRefused(mnt, 15, 1000); };
  {
    Held bob(bob_, bob_registers);
    ASSERT_TRUE(bob.got());
    EXPECT_EQ(bob.outcome().result, -EDQUOT) << bob.outcome().describe;
    EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_FILES);
    EXPECT_EQ(bob.outcome().count, kUserFiles);
    EXPECT_NE(std::string(bob.outcome().describe).find("--user-files"),
              std::string::npos);
    EXPECT_TRUE(DaemonAlive());
    // While bob holds his files: alice reads through the mount and
    // registers her own file.
    const Outcome alice = AliceStillWorks();
    EXPECT_EQ(alice.result, 0)
        << "step " << alice.other << ": " << alice.describe;
    bob.Release();
  }
  // Bob's sessions ended: his files are given back, and he gets them again.
  const Outcome again = OnceGivenBack(bob_, bob_registers, kUserFiles);
  EXPECT_EQ(again.result, -EDQUOT);
  EXPECT_EQ(again.count, kUserFiles);
  EXPECT_TRUE(DaemonAlive());
}

// The daemon-wide cap on registered files (--daemon-files), with two real
// users: bob takes his share (his per-user limit), alice the rest, and her
// next registration is refused with EAGAIN naming the daemon's cap, not her
// own limit; she still reads through the mount, and once bob's sessions end
// the files he held are hers to register.
TEST_F(UsrbioLimitsTest, AllUsersFilesStopAtTheDaemonsFileCap) {
  constexpr int64_t kUserFiles = 40;
  constexpr int64_t kDaemonFiles = 60;
  ASSERT_NO_FATAL_FAILURE(
      Mount({"--user-files", std::to_string(kUserFiles), "--daemon-files",
             std::to_string(kDaemonFiles)}));
  const std::string mnt = mnt_;
  auto registers = [mnt] { return RegisterUntilRefused(mnt, 15, 1000); };
  Held bob(bob_, registers);
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().result, -EDQUOT) << bob.outcome().describe;
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_FILES);
  EXPECT_EQ(bob.outcome().count, kUserFiles);
  {
    Held alice(alice_, registers);
    ASSERT_TRUE(alice.got());
    EXPECT_EQ(alice.outcome().result, -EAGAIN) << alice.outcome().describe;
    EXPECT_EQ(alice.outcome().limit, FGDS_LIMIT_DAEMON_FILES);
    EXPECT_EQ(alice.outcome().count, kDaemonFiles - kUserFiles);
    EXPECT_NE(std::string(alice.outcome().describe).find("--daemon-files"),
              std::string::npos)
        << alice.outcome().describe;
    alice.Release();
  }
  // A plain read through the mount still works at the cap.
  {
    Held alice(alice_, [mnt] {
      Outcome o;
      int fd = open((mnt + "/shared").c_str(), O_RDONLY | O_CLOEXEC);
      std::vector<char> buf(kFileSize);
      if (fd < 0 || read(fd, buf.data(), buf.size()) != kFileSize) {
        o.result = -errno;
      }
      if (fd >= 0) close(fd);
      return o;
    });
    ASSERT_TRUE(alice.got());
    EXPECT_EQ(alice.outcome().result, 0);
    alice.Release();
  }
  bob.Release();
  // Bob's files come back: alice then reaches her own limit, not the
  // daemon's.
  const Outcome again = OnceGivenBack(alice_, registers, kUserFiles);
  EXPECT_EQ(again.result, -EDQUOT) << again.describe;
  EXPECT_EQ(again.limit, FGDS_LIMIT_USER_FILES);
  EXPECT_EQ(again.count, kUserFiles);
  EXPECT_TRUE(DaemonAlive());
}

// Without options the limit is sized from the daemon's descriptor limit
// (a quarter of it for all users' files, an eighth of that per user), far
// below what one user could hold before (65,536 per session, in as many
// sessions as his session limit allows): bob stops there, alice goes on.
TEST_F(UsrbioLimitsTest, DefaultFileLimitLeavesTheDaemonDescriptors) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  const uint64_t fd_limit = FdLimitOf(fs_->daemon_pid());
  ASSERT_GT(fd_limit, 0u);
  const int64_t expected =
      static_cast<int64_t>(std::max<uint64_t>(16, fd_limit / 4 / 8));
  const std::string mnt = mnt_;
  Held bob(
      bob_,
      [mnt, expected] {
        return RegisterUntilRefused(mnt, 4096, 2 * expected + 100);
      },
      [] { RaiseFileLimit(4096); });
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().result, -EDQUOT) << bob.outcome().describe;
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_FILES);
  EXPECT_EQ(bob.outcome().count, expected);
  EXPECT_TRUE(DaemonAlive());
  const Outcome alice = AliceStillWorks();
  EXPECT_EQ(alice.result, 0)
      << "step " << alice.other << ": " << alice.describe;
  bob.Release();
}

// The daemon-wide cap: when all users together reach it, the next one gets
// EAGAIN naming it, not a crash.
TEST_F(UsrbioLimitsTest, AllUsersTogetherStopAtTheDaemonsCap) {
  ASSERT_NO_FATAL_FAILURE(
      Mount({"--user-mappings", "40", "--daemon-mappings", "60"}));
  const std::string mnt = mnt_;
  auto take_all = [mnt](std::vector<Iov*>* iovs) {
    Outcome o;
    auto* s = new Session(mnt);
    if (s->open_result != 0) {
      o.result = s->open_result;
      return o;
    }
    for (;;) {
      auto* iov = new Iov(&s->s, 4096);
      if (iov->result != 0) {
        o.result = iov->result;
        o.limit = s->s.last_limit;
        break;
      }
      iovs->push_back(iov);
      ++o.count;
    }
    SetDescribe(&o);
    return o;
  };
  std::vector<Iov*> bobs;
  std::vector<Iov*> alices;
  Held bob(bob_, [&] { return take_all(&bobs); });
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().count, 40);
  EXPECT_EQ(bob.outcome().result, -EDQUOT);
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_MAPPINGS);
  Held alice(alice_, [&] { return take_all(&alices); });
  ASSERT_TRUE(alice.got());
  EXPECT_EQ(alice.outcome().count, 20);
  EXPECT_EQ(alice.outcome().result, -EAGAIN);
  EXPECT_EQ(alice.outcome().limit, FGDS_LIMIT_DAEMON_MAPPINGS)
      << alice.outcome().describe;
  // Bob leaving gives the room back.
  bob.Release();
  alice.Release();
  EXPECT_EQ(AliceStillWorks().result, 0);
}

// Issue 12: about 200 registrations of sparse 1 TiB memfds filled the
// daemon's address space, and the next ordinary `cat` aborted it.
TEST_F(UsrbioLimitsTest, SparseHugeMemfdsAreRefusedWithoutMapping) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  const uint64_t before = ProcStatusBytes(fs_->daemon_pid(), "VmSize");
  const std::string mnt = mnt_;
  Held bob(bob_, [mnt] {
    Outcome o;
    Session s(mnt);
    if (s.open_result != 0) {
      o.result = s.open_result;
      return o;
    }
    int huge = SparseMemfd(kTiB);
    int big = SparseMemfd(kGiB);
    if (huge < 0 || big < 0) {
      o.result = -ENOMEM;
      return o;
    }
    for (int i = 0; i < 200; ++i) {
      fgds_msg_reply r = RawIovRegister(&s.s, huge, kTiB);
      if (r.result == 0) ++o.count;
      o.result = r.result;
      o.limit = r.reason;
    }
    // Small enough for his byte limit, but with no page allocated.
    fgds_msg_reply r = RawIovRegister(&s.s, big, kGiB);
    o.other = r.result;
    o.count += r.result == 0 ? 1 : 0;
    if (r.reason != FGDS_LIMIT_UNALLOCATED) o.other = -1000;
    SetDescribe(&o);
    return o;
  });
  ASSERT_TRUE(bob.got());
  EXPECT_EQ(bob.outcome().count, 0);
  EXPECT_EQ(bob.outcome().result, -EDQUOT);
  EXPECT_EQ(bob.outcome().limit, FGDS_LIMIT_USER_BYTES)
      << bob.outcome().describe;
  EXPECT_EQ(bob.outcome().other, -EINVAL);
  // Nothing of it stayed in the daemon's address space.
  EXPECT_LT(ProcStatusBytes(fs_->daemon_pid(), "VmSize"), before + kGiB);
  const Outcome alice = AliceStillWorks();
  EXPECT_EQ(alice.result, 0) << "step " << alice.other;
  bob.Release();
  EXPECT_TRUE(DaemonAlive());
}

// A memory cgroup for one test: cgroup v2 if its memory controller is
// usable here, else v1's. Empty path when neither can be created.
class MemoryCgroup {
 public:
  explicit MemoryCgroup(uint64_t limit) {
    const std::string name = "fgds-limits-test-" + std::to_string(getpid());
    const std::string v1 = "/sys/fs/cgroup/memory/" + name;
    const std::string v2 = "/sys/fs/cgroup/" + name;
    if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 &&
        mkdir(v2.c_str(), 0755) == 0) {
      if (Write(v2 + "/memory.max", std::to_string(limit))) {
        path_ = v2;
        usage_ = "memory.current";
        return;
      }
      rmdir(v2.c_str());
    }
    if (mkdir(v1.c_str(), 0755) == 0) {
      if (Write(v1 + "/memory.limit_in_bytes", std::to_string(limit))) {
        path_ = v1;
        usage_ = "memory.usage_in_bytes";
        return;
      }
      rmdir(v1.c_str());
    }
  }
  ~MemoryCgroup() {
    if (!path_.empty()) rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // Moves the calling process in (as root, before dropping privileges).
  void Join() const { Write(path_ + "/cgroup.procs", "0"); }
  uint64_t usage() const { return ReadNumber(path_ + "/" + usage_); }

 private:
  static bool Write(const std::string& file, const std::string& value) {
    int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, value.data(), value.size()) ==
              static_cast<ssize_t>(value.size());
    close(fd);
    return ok;
  }
  std::string path_;
  std::string usage_;
};

// Issue 12: a user capped at 256 MiB had the daemon fill 2 GiB of his
// buffer, charged to nobody. Now his iovs are allocated (and charged to
// his cgroup) when he creates them, and memory he did not allocate is
// refused.
TEST_F(UsrbioLimitsTest, AMemoryCappedUserPaysForHisIovs) {
  ASSERT_NO_FATAL_FAILURE(Mount());
  MemoryCgroup cgroup(256 << 20);
  if (cgroup.path().empty()) {
    GTEST_SKIP() << "no writable memory cgroup (v1 or v2) here";
  }
  const std::string mnt = mnt_;
  // Within his cap: the iov's pages are charged to his cgroup at creation,
  // before the daemon writes a byte.
  Held bob(
      bob_,
      [mnt] {
        Outcome o;
        // Held until the child exits, so the parent sees the charge.
        auto* s = new Session(mnt);
        auto* iov = new Iov(&s->s, 128 << 20);
        o.result = iov->result;
        o.count = iov->result == 0 ? 1 : 0;
        return o;
      },
      [&] { cgroup.Join(); });
  ASSERT_TRUE(bob.got());
  ASSERT_EQ(bob.outcome().result, 0);
  EXPECT_GE(cgroup.usage(), uint64_t{128} << 20);
  bob.Release();
  // Memory he did not allocate is refused outright: the daemon would
  // otherwise allocate it, charged to itself, when it writes.
  Held sparse(
      bob_,
      [mnt] {
        Outcome o;
        Session s(mnt);
        int memfd = SparseMemfd(2 * kGiB);
        fgds_msg_reply r = RawIovRegister(&s.s, memfd, 2 * kGiB);
        o.result = r.result;
        o.limit = r.reason;
        return o;
      },
      [&] { cgroup.Join(); });
  ASSERT_TRUE(sparse.got());
  EXPECT_EQ(sparse.outcome().result, -EINVAL);
  EXPECT_EQ(sparse.outcome().limit, FGDS_LIMIT_UNALLOCATED);
  sparse.Release();
  // Over his cap: creating the iov fails in his process (an error, or his
  // cgroup's OOM killer), never in the daemon.
  Held greedy(
      bob_,
      [mnt] {
        Outcome o;
        Session s(mnt);
        Iov iov(&s.s, 2 * kGiB);
        o.result = iov.result;
        return o;
      },
      [&] { cgroup.Join(); });
  greedy.Release();
  if (greedy.got()) {
    EXPECT_NE(greedy.outcome().result, 0);
  } else {
    EXPECT_EQ(greedy.outcome().killed_by, SIGKILL);
  }
  EXPECT_TRUE(DaemonAlive());
  EXPECT_EQ(AliceStillWorks().result, 0);
}

}  // namespace
}  // namespace fgds::testing
