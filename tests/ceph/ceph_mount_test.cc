// ceph_mount_test: fgds mounted with --backend ceph over a throwaway
// one-node CephFS (start-cluster.sh), real POSIX I/O through the mount, and
// a second mount (a second daemon, as a second node would run) reading what
// the first wrote. Skips, saying why, where the fgds binary was built
// without libcephfs, the ceph daemons are not installed, or there is no
// root and /dev/fuse. CEPH_CONF=FILE uses a running cluster instead.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend/remote/agent_client.h"
#include "gtest/gtest.h"
#include "tests/ceph/test_cluster.h"
#include "tests/lib/agent_process.h"
#include "tests/lib/file_contents.h"
#include "tests/lib/mounted_fs.h"

namespace fgds::testing {
namespace {

// The cluster every test of this binary shares.
using Cluster = TestCluster;
Cluster* cluster = nullptr;

class CephEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    cluster = new Cluster;
#ifndef FGDS_HAVE_CEPH
    cluster->skip_reason = "fgds built without libcephfs (libcephfs-dev)";
    return;
#endif
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      cluster->skip_reason = "needs root and /dev/fuse";
      return;
    }
    if (const char* conf = getenv("CEPH_CONF"); conf != nullptr && *conf) {
      cluster->conf = conf;
      return;
    }
    auto start = std::chrono::steady_clock::now();
    bool missing = false;
    if (!cluster->Start("", &missing)) {
      if (!missing) ADD_FAILURE() << "test cluster did not start";
      return;
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    fprintf(stderr, "ceph test cluster up in %.1f s: %s\n", secs,
            cluster->conf.c_str());
  }
  void TearDown() override {
    if (cluster != nullptr) cluster->Stop();
    delete cluster;
    cluster = nullptr;
  }
};

const auto* const env =
    ::testing::AddGlobalTestEnvironment(new CephEnvironment);

bool WriteAll(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, data.data(), data.size()) ==
                static_cast<ssize_t>(data.size()) &&
            fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

std::set<std::string> List(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  closedir(d);
  return names;
}

class CephMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cluster->conf.empty()) GTEST_SKIP() << cluster->skip_reason;
    auto fs = Mount("/");
    ASSERT_TRUE(fs.ok()) << fs.status();
    fs_ = *std::move(fs);
    // Each test works in a directory of its own: the cluster is shared
    // (and may be one CEPH_CONF names, which outlives a run).
    name_ = absl::StrCat(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".",
        getpid());
    dir_ = absl::StrCat(fs_->mountpoint(), "/", name_);
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0) << strerror(errno);
  }

  static absl::StatusOr<std::unique_ptr<MountedFs>> Mount(
      const std::string& root) {
    MountOptions options;
    options.extra_args = {"--backend",   "ceph",        "--ceph-conf",
                          cluster->conf, "--ceph-root", root};
    options.timeout_ms = 40000;
    return MountedFs::Start(options);
  }

  std::unique_ptr<MountedFs> fs_;
  std::string name_;  // of dir_, in the file system's root
  std::string dir_;
};

TEST_F(CephMountTest, CreateWriteReadRenameReaddirUnlink) {
  const std::string a = dir_ + "/a", b = dir_ + "/b";
  ASSERT_TRUE(WriteAll(a, "hello ceph"));
  EXPECT_EQ(ReadAll(a), "hello ceph");
  struct stat st;
  ASSERT_EQ(stat(a.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 10);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);

  ASSERT_EQ(rename(a.c_str(), b.c_str()), 0) << strerror(errno);
  EXPECT_EQ(access(a.c_str(), F_OK), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_EQ(ReadAll(b), "hello ceph");

  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0755), 0);
  ASSERT_TRUE(WriteAll(dir_ + "/sub/c", "c"));
  EXPECT_EQ(List(dir_), (std::set<std::string>{"b", "sub"}));
  EXPECT_EQ(List(dir_ + "/sub"), (std::set<std::string>{"c"}));

  // Appends and truncation go through setattr and the offsets the kernel
  // computes.
  int fd = open(b.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "!", 1), 1);
  close(fd);
  EXPECT_EQ(ReadAll(b), "hello ceph!");
  ASSERT_EQ(truncate(b.c_str(), 5), 0);
  EXPECT_EQ(ReadAll(b), "hello");

  EXPECT_EQ(rmdir((dir_ + "/sub").c_str()), -1);
  EXPECT_EQ(errno, ENOTEMPTY);
  ASSERT_EQ(unlink((dir_ + "/sub/c").c_str()), 0);
  ASSERT_EQ(rmdir((dir_ + "/sub").c_str()), 0);
  ASSERT_EQ(unlink(b.c_str()), 0);
  EXPECT_TRUE(List(dir_).empty());
  EXPECT_EQ(unlink(b.c_str()), -1);
  EXPECT_EQ(errno, ENOENT);

  struct statvfs vfs;
  ASSERT_EQ(statvfs(dir_.c_str(), &vfs), 0);
  // Sizes come from the manager's pool statistics; the test cluster runs
  // none, so only the call is checked.
  EXPECT_GT(vfs.f_bsize, 0u);
}

TEST_F(CephMountTest, LinksAttributesAndXattrs) {
  const std::string f = dir_ + "/f", l = dir_ + "/l", h = dir_ + "/h";
  ASSERT_TRUE(WriteAll(f, "data"));
  ASSERT_EQ(symlink("f", l.c_str()), 0) << strerror(errno);
  char target[64] = {};
  ASSERT_EQ(readlink(l.c_str(), target, sizeof(target)), 1);
  EXPECT_STREQ(target, "f");
  EXPECT_EQ(ReadAll(l), "data");
  ASSERT_EQ(link(f.c_str(), h.c_str()), 0) << strerror(errno);
  struct stat st;
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(ReadAll(h), "data");

  ASSERT_EQ(chmod(f.c_str(), 0600), 0);
  ASSERT_EQ(chown(f.c_str(), 1234, 4321), 0);
  struct timespec times[2] = {{1000, 0}, {2000, 500}};
  ASSERT_EQ(utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
  ASSERT_EQ(stat(h.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_atim.tv_sec, 1000);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 500);

  ASSERT_EQ(setxattr(f.c_str(), "user.k", "v1", 2, 0), 0) << strerror(errno);
  char value[16] = {};
  EXPECT_EQ(getxattr(f.c_str(), "user.k", value, sizeof(value)), 2);
  EXPECT_STREQ(value, "v1");
  char list[256] = {};
  ssize_t n = listxattr(f.c_str(), list, sizeof(list));
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(list, n).find("user.k"), std::string::npos);
  ASSERT_EQ(removexattr(f.c_str(), "user.k"), 0);
  EXPECT_EQ(getxattr(f.c_str(), "user.k", value, sizeof(value)), -1);
  EXPECT_EQ(errno, ENODATA);

  // What the slice refuses, with its errno (docs/ceph.md); an existing
  // target is the kernel's EEXIST before the request reaches us.
  const std::string fresh = dir_ + "/fresh";
  EXPECT_EQ(
      renameat2(AT_FDCWD, f.c_str(), AT_FDCWD, fresh.c_str(), RENAME_NOREPLACE),
      -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(CephMountTest, LargeFileRandomOffsetsByteForByte) {
  constexpr size_t kSize = 24 << 20;  // spans several 4 MiB objects
  const std::string path = dir_ + "/big";
  std::mt19937_64 rng(13);
  std::string model(kSize, '\0');
  for (char& c : model) c = static_cast<char>(rng());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, model.data(), kSize, 0), static_cast<ssize_t>(kSize));
  // Overwrite random ranges, some across object boundaries.
  for (int i = 0; i < 200; ++i) {
    size_t len = 1 + rng() % (512 << 10);
    size_t off = rng() % (kSize - len);
    std::string piece(len, '\0');
    for (char& c : piece) c = static_cast<char>(rng());
    ASSERT_EQ(pwrite(fd, piece.data(), len, off), static_cast<ssize_t>(len));
    model.replace(off, len, piece);
  }
  ASSERT_EQ(fsync(fd), 0);
  // Random reads against the model.
  for (int i = 0; i < 200; ++i) {
    size_t len = 1 + rng() % (1 << 20);
    size_t off = rng() % (kSize - len);
    std::string got(len, '\0');
    ASSERT_EQ(pread(fd, got.data(), len, off), static_cast<ssize_t>(len));
    ASSERT_TRUE(got == model.substr(off, len)) << "mismatch at " << off;
  }
  close(fd);
  // A fresh open: the writes moved the file's stamp, so the mount's cached
  // pages go (KeepCache, docs/remote.md) and the read comes from Ceph.
  std::string all = ReadAll(path);
  ASSERT_EQ(all.size(), kSize);
  EXPECT_TRUE(all == model);
}

TEST_F(CephMountTest, SecondMountReadsWhatTheFirstWrote) {
  std::string data(5 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng());
  ASSERT_TRUE(WriteAll(dir_ + "/shared", data));

  // A second daemon with its own Ceph session, mounted on the test's
  // directory (--ceph-root), while the first is still mounted.
  auto second = Mount("/" + name_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(List((*second)->mountpoint()), (std::set<std::string>{"shared"}));
  EXPECT_TRUE(ReadAll((*second)->mountpoint() + "/shared") == data);

  // What the second writes, the first reads after open.
  ASSERT_TRUE(WriteAll((*second)->mountpoint() + "/back", "from the second"));
  EXPECT_EQ(ReadAll(dir_ + "/back"), "from the second");

  // Durability through Ceph, not a daemon's memory: both daemons gone, a
  // third reads the data.
  ASSERT_TRUE((*second)->Unmount().ok());
  ASSERT_TRUE(fs_->Unmount().ok());
  auto third = Mount("/");
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_TRUE(ReadAll((*third)->mountpoint() + "/" + name_ + "/shared") ==
              data);
}

TEST_F(CephMountTest, CreatedFilesBelongToTheCaller) {
  // The caller's credentials reach Ceph (UserPerm): a file made by uid 1234
  // is owned by 1234 in CephFS, as a second mount sees it.
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  // The mount's private parent directory must let the user through.
  const std::string parent =
      fs_->mountpoint().substr(0, fs_->mountpoint().rfind('/'));
  ASSERT_EQ(chmod(parent.c_str(), 0755), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgid(4321) != 0 || setuid(1234) != 0) _exit(2);
    umask(022);
    int fd = open((dir_ + "/mine").c_str(), O_CREAT | O_WRONLY, 0666);
    if (fd < 0) _exit(100 + errno);
    close(fd);
    if (mkdir((dir_ + "/mydir").c_str(), 0777) != 0) _exit(50 + errno);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/mine").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ASSERT_EQ(stat((dir_ + "/mydir").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// No mount test fixture: nothing to serve. A conf naming no live monitor
// makes `fgds mount` fail within the conf's client_mount_timeout, saying
// why, rather than hang.
TEST(CephUnreachableTest, MountFailsWithinTheTimeout) {
  if (cluster->skip_reason == "fgds built without libcephfs (libcephfs-dev)" ||
      cluster->skip_reason == "needs root and /dev/fuse") {
    GTEST_SKIP() << cluster->skip_reason;
  }
  auto dir = MakeTempDir("fgds-ceph-dead.");
  ASSERT_TRUE(dir.ok());
  const std::string conf = *dir + "/ceph.conf", keyring = *dir + "/keyring";
  ASSERT_TRUE(WriteAll(keyring,
                       "[client.admin]\n\tkey = "
                       "AQBnZ2dnAAAAABAAmZmZmZmZmZmZmZmZmZmZmQ==\n"));
  // Port 1 on loopback: nothing listens there.
  ASSERT_TRUE(
      WriteAll(conf, absl::StrCat("[global]\nmon_host = "
                                  "v2:127.0.0.1:1\nms_bind_msgr1 = "
                                  "false\nkeyring = ",
                                  keyring, "\nclient_mount_timeout = 3\n")));
  ASSERT_EQ(mkdir((*dir + "/mnt").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((*dir + "/data").c_str(), 0755), 0);
  auto start = std::chrono::steady_clock::now();
  int rc = 0;
  std::string out =
      RunScript(absl::StrCat("timeout 60 ", FgdsBinary(),
                             " mount -f --backend ceph --ceph-conf ", conf,
                             " --data ", *dir, "/data ", *dir, "/mnt 2>&1"),
                &rc);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  RemoveTree(*dir);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("within 3 s"), std::string::npos) << out;
  EXPECT_NE(out.find("timed out"), std::string::npos) << out;
  EXPECT_LT(secs, 20) << out;
}

// `fgds agent --ceph-conf` serves the files a ceph mount wrote, and what it
// writes is what the mount reads next (the agent writes through, and the
// mount drops its cached pages at each open).
TEST_F(CephMountTest, AnAgentServesTheCephFilesTheMountWrote) {
  const std::string key = dir_ + ".key";
  ASSERT_TRUE(WriteAll(key, std::string(44, 'c')));
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  // 9 MiB + 5: three 4 MiB objects and two agent requests (8 MiB each).
  std::string data((9 << 20) + 5, '\0');
  std::mt19937 rng(7);
  for (char& ch : data) ch = static_cast<char>(rng());
  ASSERT_TRUE(WriteAll(dir_ + "/ckpt", data));

  auto agent = AgentProcess::Start(
      {"--listen", "127.0.0.1:0", "--ceph-conf", cluster->conf, "--key", key});
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_NE((*agent)->first_line().find("CephFS"), std::string::npos)
      << (*agent)->first_line();
  remote::AgentClientOptions o;
  auto address = remote::ParseHostPort((*agent)->address());
  ASSERT_TRUE(address.ok());
  o.agent = *address;
  auto loaded = remote::LoadAgentKey(key);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  o.key = *loaded;
  o.checked = true;
  auto client = remote::AgentClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::string path = name_ + "/ckpt";
  std::string back(data.size() + 100, '\0');
  ASSERT_EQ((*client)->Read(path, 0, back.data(), back.size()),
            static_cast<int64_t>(data.size()))
      << (*client)->last_error();
  back.resize(data.size());
  EXPECT_TRUE(back == data) << "the agent read other bytes than were written";

  const std::string patch(65536, 'P');
  ASSERT_EQ((*client)->Write(path, 1 << 20, patch.data(), patch.size()),
            static_cast<int64_t>(patch.size()))
      << (*client)->last_error();
  data.replace(1 << 20, patch.size(), patch);
  EXPECT_TRUE(ReadAll(dir_ + "/ckpt") == data)
      << "the mount did not see the agent's write";

  char small[8];
  EXPECT_EQ((*client)->Read(name_ + "/missing", 0, small, sizeof(small)),
            -ENOENT);
  EXPECT_EQ((*client)->Read(name_, 0, small, sizeof(small)), -EISDIR);
  EXPECT_EQ((*client)->Read("../" + path, 0, small, sizeof(small)), -EINVAL);
  std::string out;
  EXPECT_EQ((*agent)->Stop(&out), 0) << out;
  unlink(key.c_str());
}

TEST(CephAgentTest, AnAgentWithoutItsClusterSaysWhyWithinItsTimeout) {
  if (cluster->conf.empty()) GTEST_SKIP() << cluster->skip_reason;
  char tmpl[] = "/tmp/ceph_agent_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, conf = dir + "/ceph.conf", key = dir + "/key";
  ASSERT_TRUE(WriteAll(conf,
                       "[global]\nmon_host = v2:127.0.0.1:1\n"
                       "ms_bind_msgr1 = false\nclient_mount_timeout = 3\n"));
  ASSERT_TRUE(WriteAll(key, std::string(44, 'c')));
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  std::string out;
  EXPECT_EQ(
      AgentProcess::RunToExit(
          {"--listen", "127.0.0.1:0", "--ceph-conf", conf, "--key", key}, &out),
      1)
      << out;
  EXPECT_NE(out.find("within 3 s"), std::string::npos) << out;
  RemoveTree(dir);
}

}  // namespace
}  // namespace fgds::testing
