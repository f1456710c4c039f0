// usrbio registrations as a hostile local user would try them (issue 12,
// "one user can read another's file"): bob registers every file of the
// mount he can open (the daemon's control files, his own files, alice's
// world-readable file) and reads each through a ring. A registration must
// reach the very file bob opened, never another file that shares a number
// with it: on a tmpfs backing directory alice's private files have the
// same small inode numbers the mount reports for /.fgds/stats and
// /.fgds/session (3 and 4), and her secret must never reach bob. Control
// files are refused with EPERM.
//
// Real unprivileged users (tests/lib/test_users.h), each in a forked child.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/usrbio_harness.h"
#include "tests/lib/test_users.h"

namespace fgds::testing {
namespace {

constexpr char kSecret[] = "ALICE-SECRET";
// Enough of alice's files to cover every inode number the mount reports
// for its control nodes, and then some.
constexpr int kAliceFiles = 64;
constexpr int kBobFiles = 16;
constexpr size_t kReadSize = 4096;

// Runs `body` as `user` in a forked child; what it writes to its pipe end
// (one complaint a line) comes back. Empty means every check held.
std::string RunAs(const TestUser& user,
                  const std::function<void(int out)>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(pipe_fds[0]);
    if (BecomeUser(user) != 0) {
      (void)!write(pipe_fds[1], "BecomeUser failed\n", 18);
      _exit(1);
    }
    body(pipe_fds[1]);
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    out += absl::StrCat("child ended with status ", status, "\n");
  }
  return out;
}

void Complain(int out, const std::string& what) {
  std::string line = what + "\n";
  (void)!write(out, line.data(), line.size());
}

bool WriteFile(const std::string& path, mode_t mode,
               const std::string& content) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, mode);
  if (fd < 0) return false;
  bool ok = write(fd, content.data(), content.size()) ==
            static_cast<ssize_t>(content.size());
  return close(fd) == 0 && ok;
}

class UsrbioCrossUserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
    auto alice = EnsureTestUser(kAlice);
    ASSERT_TRUE(alice.ok()) << alice.status();
    alice_ = *alice;
    auto bob = EnsureTestUser(kBob);
    ASSERT_TRUE(bob.ok()) << bob.status();
    bob_ = *bob;
    MountOptions options;
    options.backing_tmpfs = true;
    auto fs = MountedFs::Start(options);
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
  }
  std::string Mnt(const std::string& name) const {
    return fs_->mountpoint() + "/" + name;
  }

  TestUser alice_;
  TestUser bob_;
  std::unique_ptr<MountedFs> fs_;
};

TEST_F(UsrbioCrossUserTest, RegistrationReachesOnlyTheFileTheClientOpened) {
  // Alice first, on the fresh tmpfs: her private directory and files take
  // the smallest inode numbers. One file is world-readable: bob may read
  // that one, through the mount and through a ring alike.
  const std::string alice_dir = Mnt("alice");
  // Everyone may create in the root, as in /tmp.
  ASSERT_EQ(chmod(fs_->mountpoint().c_str(), 01777), 0);
  std::string complaints = RunAs(alice_, [&](int out) {
    if (mkdir(alice_dir.c_str(), 0700) != 0) {
      Complain(out, "alice: mkdir failed");
      return;
    }
    for (int i = 0; i < kAliceFiles; ++i) {
      std::string path = absl::StrCat(alice_dir, "/secret", i);
      if (!WriteFile(path, 0600, absl::StrCat(kSecret, "-", i))) {
        Complain(out, "alice: cannot write " + path);
      }
    }
    if (!WriteFile(Mnt("alice-public"), 0644, "alice's public words")) {
      Complain(out, "alice: cannot write alice-public");
    }
  });
  ASSERT_EQ(complaints, "");
  struct stat st;
  ASSERT_EQ(stat((fs_->backing() + "/alice/secret1").c_str(), &st), 0);
  // The attack needs backing numbers that collide with the mount's control
  // nodes; tmpfs gives them.
  ASSERT_LT(st.st_ino, 16u) << "backing inode numbers are not small";

  complaints = RunAs(bob_, [&](int out) {
    for (int i = 0; i < kBobFiles; ++i) {
      if (!WriteFile(Mnt(absl::StrCat("bob", i)), 0600,
                     absl::StrCat("bob's own ", i))) {
        Complain(out, absl::StrCat("bob: cannot write bob", i));
      }
    }
    Session s(fs_->mountpoint());
    if (s.open_result != 0) {
      Complain(out, absl::StrCat("bob: session ", s.open_result));
      return;
    }
    Iov iov(&s.s, kReadSize);
    Ior ior(&s.s);
    if (iov.result != 0 || ior.result != 0) {
      Complain(out, "bob: iov or ior failed");
      return;
    }
    std::vector<std::string> paths = {Mnt(".fgds/stats"), Mnt(".fgds/session"),
                                      Mnt("alice-public")};
    for (int i = 0; i < kBobFiles; ++i) {
      paths.push_back(Mnt(absl::StrCat("bob", i)));
    }
    for (int i = 0; i < kAliceFiles; ++i) {
      paths.push_back(absl::StrCat(alice_dir, "/secret", i));
    }
    for (const std::string& path : paths) {
      const bool control = path.find("/.fgds/") != std::string::npos;
      int fd = open(path.c_str(), O_RDONLY);
      if (fd < 0) {
        // Alice's private files: bob cannot even open them.
        if (path.find("/alice/") == std::string::npos) {
          Complain(out, "bob: cannot open " + path);
        }
        continue;
      }
      std::string expected(kReadSize, '\0');
      ssize_t expected_len = pread(fd, expected.data(), kReadSize, 0);
      int id = fgds_fd_register(&s.s, fd, 0);
      close(fd);
      if (control) {
        if (id != -EPERM) {
          Complain(out, absl::StrCat("bob: registering ", path, " gave ", id,
                                     ", not -EPERM"));
        }
        if (id < 0) continue;
      } else if (id < 0) {
        Complain(out, absl::StrCat("bob: registering ", path, ": ", id));
        continue;
      }
      memset(iov.at(0), 0, kReadSize);
      fgds_cqe cqe = {};
      if (fgds_prep_read(&ior.ior, &iov.iov, iov.at(0), id, 0, kReadSize, 1) !=
              0 ||
          SubmitAndWaitAll(&ior.ior, &cqe, 1) != 1) {
        Complain(out, "bob: ring read failed for " + path);
        continue;
      }
      std::string got(iov.at(0), cqe.result > 0 ? cqe.result : 0);
      if (got.find(kSecret) != std::string::npos) {
        Complain(out, "bob read alice's secret through " + path + ": " + got);
      } else if (!control && (cqe.result != expected_len ||
                              got != expected.substr(0, expected_len))) {
        Complain(out,
                 absl::StrCat("bob: ring read of ", path, " gave ", cqe.result,
                              " bytes \"", got, "\", not what read(2) gives"));
      }
      fgds_fd_unregister(&s.s, id);
    }
  });
  EXPECT_EQ(complaints, "");
}

}  // namespace
}  // namespace fgds::testing
