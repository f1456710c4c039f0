// File: tests/integration/usrbio_harness.h
//
// Shared pieces of the usrbio integration tests: a fixture that mounts a
// daemon (skipping without root or /dev/fuse), RAII owners for the C API's
// objects, and data patterns to verify what moved.
#ifndef FGDS_TESTS_INTEGRATION_USRBIO_HARNESS_H_
#define FGDS_TESTS_INTEGRATION_USRBIO_HARNESS_H_

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"
#include "tests/lib/mounted_fs.h"
#include "tests/lib/test_users.h"
#include "tests/lib/usrbio_stats.h"

namespace fgds::testing {

class UsrbioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto fs = MountedFs::Start();
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }
  std::string Mnt(const std::string& name) const {
    return fs_->mountpoint() + "/" + name;
  }
  std::string Backing(const std::string& name) const {
    return fs_->backing() + "/" + name;
  }
  // Whether the backing filesystem takes O_DIRECT (tmpfs does not).
  bool BackingSupportsDirect() const {
    std::string probe = Backing(".direct-probe");
    int fd = open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
    if (fd >= 0) close(fd);
    unlink(probe.c_str());
    return fd >= 0;
  }

  std::unique_ptr<MountedFs> fs_;
};

// Owners that close what the test opened even when an assertion fails.
struct Session {
  fgds_session s = {};
  int open_result = -1;
  explicit Session(const std::string& path) {
    open_result = fgds_session_open(&s, path.c_str(), nullptr);
  }
  ~Session() {
    if (open_result == 0) fgds_session_close(&s);
  }
};

struct Iov {
  fgds_iov iov = {};
  int result = -1;
  Iov(fgds_session* s, uint64_t size) {
    fgds_iov_params p = {};
    p.size = size;
    p.numa_node = -1;
    result = fgds_iov_create(s, &iov, &p);
  }
  ~Iov() {
    if (result == 0) fgds_iov_destroy(&iov);
  }
  char* at(uint64_t offset) { return static_cast<char*>(iov.base) + offset; }
};

struct Ior {
  fgds_ior ior = {};
  int result = -1;
  Ior(fgds_session* s, const fgds_ior_params* p = nullptr) {
    result = fgds_ior_create(s, &ior, p);
  }
  ~Ior() {
    if (result == 0) fgds_ior_destroy(&ior);
  }
};

// Opens `path` (through the mount) with `flags`, registers it with
// `session` and closes it again: the registration keeps what it needs.
// Returns the id or -errno.
inline int RegisterPath(fgds_session* session, const std::string& path,
                        int flags) {
  int fd = open(path.c_str(), flags);
  if (fd < 0) return -errno;
  int id = fgds_fd_register(session, fd, 0);
  close(fd);
  return id;
}

// The slot the next fgds_prep_* of `ior` fills: tests rewrite it after
// the prep to forge entries the library would not write.
inline fgds_sqe& NextSqe(fgds_ior& ior) {
  return ior
      .sqes[(ior.ring->sq_tail.value + ior.sq_pending) & (ior.sq_entries - 1)];
}

// Byte i of a pattern seeded with `seed`: position-dependent, so a block
// read from the wrong offset does not match.
// The seed is multiplied in before the top byte is taken, so different
// seeds give different bytes at the same offset.
inline char PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x =
      ((i + 1) ^ (seed * 0xD6E8FEB86659FD93ull)) * 0x9E3779B97F4A7C15ull;
  return static_cast<char>(x >> 56);
}
inline void FillPattern(char* buf, uint64_t len, uint64_t seed,
                        uint64_t file_offset) {
  for (uint64_t i = 0; i < len; ++i)
    buf[i] = PatternByte(seed, file_offset + i);
}
inline bool MatchesPattern(const char* buf, uint64_t len, uint64_t seed,
                           uint64_t file_offset) {
  for (uint64_t i = 0; i < len; ++i) {
    if (buf[i] != PatternByte(seed, file_offset + i)) return false;
  }
  return true;
}

// Submits everything prepared and waits for `n` completions into `cqes`.
inline int SubmitAndWaitAll(fgds_ior* ior, fgds_cqe* cqes, unsigned n) {
  int ret = fgds_ior_submit(ior);
  if (ret < 0) return ret;
  unsigned got = 0;
  while (got < n) {
    ret = fgds_ior_wait(ior, cqes + got, n - got, 1, 10 * 1000 * 1000);
    if (ret <= 0) return ret < 0 ? ret : -ETIMEDOUT;
    got += static_cast<unsigned>(ret);
  }
  return static_cast<int>(got);
}

// Writes `len` bytes of pattern `seed` (FillPattern) at `offset` of
// `path` through a usrbio ring of `mountpoint`, in the calling process
// (whose credentials the daemon sees). 0, or the step that failed.
inline int RingWritePattern(const std::string& mountpoint,
                            const std::string& path, uint64_t offset,
                            uint64_t len, uint64_t seed) {
  Session s(mountpoint);
  if (s.open_result != 0) return 11;
  const int id = RegisterPath(&s.s, path, O_RDWR);
  if (id < 0) return 12;
  Iov iov(&s.s, len);
  Ior ior(&s.s);
  if (iov.result != 0 || ior.result != 0) return 13;
  FillPattern(iov.at(0), len, seed, offset);
  if (fgds_prep_write(&ior.ior, &iov.iov, iov.at(0), id, offset, len, 0) != 0) {
    return 14;
  }
  fgds_cqe cqe = {};
  if (SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1) return 15;
  return cqe.result == static_cast<int64_t>(len) ? 0 : 16;
}

// The descriptors of process `pid` of the kinds a usrbio session holds in
// the daemon: sockets, eventfds, and files under `backing`. (The daemon's
// other descriptors, e.g. one /dev/fuse clone per FUSE worker thread, come
// and go with its load and say nothing about leaks.)
inline std::vector<std::string> SessionFds(pid_t pid,
                                           const std::string& backing) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::vector<std::string> found;
  // TCP sockets are a network backend's own connections (libcephfs opens
  // one to each OSD the first time it needs it), not a session's.
  std::set<std::string> tcp;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string field;
      for (int i = 0; i < 10 && fields >> field; ++i) {
      }
      tcp.insert("socket:[" + field + "]");  // the 10th field: the inode
    }
  }
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[4096];
    ssize_t n =
        readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (n < 0) continue;
    std::string t(target, static_cast<size_t>(n));
    if ((t.rfind("socket:", 0) == 0 && tcp.count(t) == 0) ||
        t == "anon_inode:[eventfd]" || t.rfind(backing + "/", 0) == 0) {
      found.push_back(t);
    }
  }
  closedir(d);
  return found;
}

// Runs `body` in a forked child that became `user` (test_users.h) and
// returns the child's exit status: what `body` returned (0 for success, a
// step number otherwise), 126 if it could not become `user`, 128 + the
// signal if it died. The test process is single-threaded, so the child may
// use the C++ library and libfgds freely.
inline int RunAsUser(const TestUser& user, const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    if (BecomeUser(user) != 0) _exit(126);
    _exit(body());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -errno;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A mount with two real users, alice and bob (test_users.h), and a
// directory "shared" on it that both may create files in.
class UsrbioTwoUsersTest : public UsrbioTest {
 protected:
  void SetUp() override {
    UsrbioTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<TestUser> alice = EnsureTestUser(kAlice);
    ASSERT_TRUE(alice.ok()) << alice.status();
    absl::StatusOr<TestUser> bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    alice_ = *alice;
    bob_ = *bob;
    ASSERT_EQ(mkdir(Mnt("shared").c_str(), 0777), 0);
    ASSERT_EQ(chmod(Mnt("shared").c_str(), 0777), 0);
  }
  std::string Shared(const std::string& name) const {
    return Mnt("shared/" + name);
  }

  TestUser alice_;
  TestUser bob_;
};

inline std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += item + " ";
  return out;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_INTEGRATION_USRBIO_HARNESS_H_
