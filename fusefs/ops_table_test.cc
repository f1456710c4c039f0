// The operation table's guard (ops_table.cc): a handler that throws fails
// its request with an errno, and the mount goes on serving. A real mount,
// served by the real table (in a forked child) over a backend that throws
// from (nearly) every call; needs root and /dev/fuse, and skips without.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fusefs/filesystem.h"
#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

// What ThrowingBackend throws.
enum class Throw { kBadAlloc, kSystemError, kOther };

// A backend over a fixed tree whose calls throw, except those the kernel
// needs to reach the calls under test: the root, "f" (a file that opens),
// "d" (a directory that opens), "l" (a symlink) and "g" (a file whose
// getattr and open throw) look up; names starting with "new" do not exist.
class ThrowingBackend final : public backend::Backend {
 public:
  static constexpr backend::NodeId kFile = 5000, kDir = 5001, kLink = 5002,
                                   kBroken = 5003;

  void set_throw(Throw what) { throw_.store(what); }
  // Counts, in `*net` (shared with the test process), lookups of the
  // entries of the root minus forgets of them, and makes ReadDir of the
  // root list "f" and "d" (each looked up, for readdirplus) before it
  // throws. REQUIRES: before serving.
  void CountLookups(std::atomic<int64_t>* net) { net_lookups_ = net; }

  backend::NodeId root() const override { return FUSE_ROOT_ID; }
  std::string EngineName() const override { return "throwing"; }
  int Lookup(backend::NodeId parent, const char* name,
             backend::Entry* out) override {
    const std::string n = name;
    if (parent == FUSE_ROOT_ID && n.rfind("new", 0) == 0) return -ENOENT;
    backend::NodeId node = n == "f"   ? kFile
                           : n == "d" ? kDir
                           : n == "l" ? kLink
                           : n == "g" ? kBroken
                                      : 0;
    if (parent != FUSE_ROOT_ID || node == 0) Fail();
    if (net_lookups_ != nullptr) net_lookups_->fetch_add(1);
    out->node = node;
    Attr(node, &out->attr);
    return 0;
  }
  void Forget(backend::NodeId, uint64_t nlookup) override {
    if (net_lookups_ == nullptr) Fail();
    net_lookups_->fetch_sub(static_cast<int64_t>(nlookup));
  }
  int GetAttr(backend::NodeId node, struct stat* out) override {
    if (node == kBroken) Fail();
    Attr(node, out);
    return 0;
  }
  int SetAttr(backend::NodeId, const backend::SetAttrRequest&,
              struct stat*) override {
    Fail();
  }
  int ReadLink(backend::NodeId, std::string*) override { Fail(); }
  int MkNod(const backend::Caller&, backend::NodeId, const char*, mode_t, dev_t,
            backend::Entry*) override {
    Fail();
  }
  int MkDir(const backend::Caller&, backend::NodeId, const char*, mode_t,
            backend::Entry*) override {
    Fail();
  }
  int SymLink(const backend::Caller&, const char*, backend::NodeId, const char*,
              backend::Entry*) override {
    Fail();
  }
  int Link(backend::NodeId, backend::NodeId, const char*,
           backend::Entry*) override {
    Fail();
  }
  int Unlink(backend::NodeId, const char*) override { Fail(); }
  int RmDir(backend::NodeId, const char*) override { Fail(); }
  int Rename(backend::NodeId, const char*, backend::NodeId, const char*,
             unsigned) override {
    Fail();
  }
  int StatFs(backend::NodeId, struct statvfs*) override { Fail(); }
  int SetXattr(backend::NodeId, const char*, const void*, size_t,
               int) override {
    Fail();
  }
  int GetXattr(backend::NodeId, const char*, void*, size_t) override { Fail(); }
  int ListXattr(backend::NodeId, char*, size_t) override { Fail(); }
  int RemoveXattr(backend::NodeId, const char*) override { Fail(); }
  int Open(backend::NodeId node, int, backend::File** out) override {
    if (node != kFile) Fail();
    *out = reinterpret_cast<backend::File*>(&file_token_);
    return 0;
  }
  int Create(const backend::Caller&, backend::NodeId, const char*, mode_t, int,
             backend::Entry*, backend::File**) override {
    Fail();
  }
  int Flush(backend::File*) override { Fail(); }
  void Release(backend::File*) override { Fail(); }
  void SubmitIo(std::span<const backend::FileIoRequest>) override { Fail(); }
  int64_t RunIo(const backend::FileIoRequest&, backend::IoPath*) override {
    Fail();
  }
  int Fsync(backend::File*, bool) override { Fail(); }
  int Fallocate(backend::File*, int, off_t, off_t) override { Fail(); }
  ssize_t CopyFileRange(backend::File*, off_t, backend::File*, off_t, size_t,
                        unsigned) override {
    Fail();
  }
  off_t Lseek(backend::File*, off_t, int) override { Fail(); }
  bool KeepCache(backend::File*) override { return false; }
  backend::NodeId NodeOf(backend::File*) override { return kFile; }
  int OpenDir(backend::NodeId, backend::Dir** out) override {
    *out = reinterpret_cast<backend::Dir*>(&dir_token_);
    return 0;
  }
  int ReadDir(
      backend::Dir*, off_t offset,
      const std::function<bool(const backend::DirEntry&)>& emit) override {
    if (net_lookups_ != nullptr) {
      const backend::DirEntry entries[] = {{"f", kFile, DT_REG, 1},
                                           {"d", kDir, DT_DIR, 2}};
      for (const backend::DirEntry& e : entries) {
        if (e.next_offset > offset && !emit(e)) return 0;
      }
    }
    Fail();
  }
  void ReleaseDir(backend::Dir*) override { Fail(); }
  int FsyncDir(backend::Dir*, bool) override { Fail(); }

 private:
  [[noreturn]] void Fail() {
    switch (throw_.load()) {
      case Throw::kBadAlloc:
        throw std::bad_alloc();
      case Throw::kSystemError:
        throw std::system_error(EMFILE, std::system_category(), "fds");
      case Throw::kOther:
        throw std::runtime_error("unexpected");
    }
    std::abort();
  }
  static void Attr(backend::NodeId node, struct stat* st) {
    *st = {};
    st->st_ino = node;
    st->st_nlink = 1;
    st->st_mode = node == kDir    ? S_IFDIR | 0755
                  : node == kLink ? S_IFLNK | 0777
                                  : S_IFREG | 0666;
    if (node == FUSE_ROOT_ID) st->st_mode = S_IFDIR | 0755;
    st->st_size = node == kFile ? 65536 : 0;
  }

  std::atomic<Throw> throw_{Throw::kBadAlloc};
  std::atomic<int64_t>* net_lookups_ = nullptr;
  char file_token_ = 0;
  char dir_token_ = 0;
};

void* NoMemory(size_t) { return nullptr; }

// Serves a Filesystem on a fresh temporary mountpoint, with the operation
// table the daemon uses, from a forked child: the "daemon". Were it to die
// (an exception escaping a handler), its /dev/fuse descriptor closes, the
// kernel aborts the connection and this process's calls fail with
// ENOTCONN; a server thread in this process would instead leave them
// waiting forever on a process that cannot exit.
class ServedMount {
 public:
  // `make_fs` runs in the child (which owns everything it creates).
  explicit ServedMount(
      const std::function<std::unique_ptr<Filesystem>()>& make_fs) {
    char dir[] = "/tmp/fgds-ops-table-test.XXXXXX";
    if (mkdtemp(dir) == nullptr) return;
    mountpoint_ = dir;
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      _exit(Serve(make_fs(), ready[1]));
    }
    close(ready[1]);
    char byte = 0;
    mounted_ = pid_ > 0 && read(ready[0], &byte, 1) == 1;
    close(ready[0]);
  }
  ~ServedMount() { Stop(); }

  bool ok() const { return mounted_; }
  std::string Path(const char* name) const { return mountpoint_ + "/" + name; }
  // Unmounts and returns the server's wait status (-1: none).
  int Stop() {
    int status = -1;
    if (mounted_) umount2(mountpoint_.c_str(), MNT_DETACH);
    mounted_ = false;
    if (pid_ > 0) {
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    if (!mountpoint_.empty()) rmdir(mountpoint_.c_str());
    mountpoint_.clear();
    return status;
  }

 private:
  // The child: mounts, says so on `ready_fd`, serves until unmounted. An
  // exception escaping the loop ends it as it ends the daemon: noexcept
  // turns it into std::terminate, never into a return to gtest.
  int Serve(std::unique_ptr<Filesystem> fs, int ready_fd) noexcept {
    std::vector<std::string> arg_strings = {
        "fgds-test", "-o",
        absl::StrCat("fsname=fgds-test,max_read=", fs->options.max_io)};
    std::vector<char*> argv;
    for (auto& a : arg_strings) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
    fuse_lowlevel_ops ops;
    AssignOperations(&ops);
    fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), fs.get());
    fuse_opt_free_args(&args);
    if (se == nullptr) return 2;
    if (fuse_session_mount(se, mountpoint_.c_str()) != 0) return 3;
    if (write(ready_fd, "r", 1) != 1) return 4;
    close(ready_fd);
    // Ends when the parent unmounts (the kernel ends the connection).
    fuse_session_loop(se);
    fuse_session_unmount(se);
    fuse_session_destroy(se);
    return 0;
  }

  std::string mountpoint_;
  pid_t pid_ = -1;
  bool mounted_ = false;
};

// Adds /.fgds/stats (as the daemon does, daemon.cc) to `fs`.
std::unique_ptr<Filesystem> WithStats(std::unique_ptr<Filesystem> fs) {
  Filesystem* raw = fs.get();
  fs->control.AddFile("stats", [raw] { return raw->stats.Render("# test"); });
  return fs;
}

struct OpCounts {
  uint64_t count = 0;
  uint64_t errors = 0;
};

// The op rows of a /.fgds/stats text: name, count, errors.
std::map<std::string, OpCounts> ReadStats(const std::string& path) {
  std::map<std::string, OpCounts> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    OpCounts c;
    if (fields >> name >> c.count >> c.errors) rows[name] = c;
  }
  return rows;
}

// Whether a wait status says the server exited normally.
std::string ServerEnd(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return absl::StrCat("status ", status);
}

class OpsTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
      GTEST_SKIP() << "needs root and /dev/fuse";
    }
  }
  // Every request reaches the daemon: no attribute or entry caching, no
  // page cache.
  static DaemonOptions Uncached() {
    DaemonOptions options;
    options.attr_timeout = 0;
    options.entry_timeout = 0;
    options.direct_io = true;
    return options;
  }
};

// One system call and the errno it must fail with.
struct FailingCall {
  const char* name;
  std::function<long()> call;
};

std::string Describe(long rc, int err) {
  return rc < 0 ? absl::StrCat("-1, errno ", err) : absl::StrCat(rc);
}

TEST_F(OpsTableTest, EveryHandlerTurnsExceptionsIntoErrnos) {
  struct Kind {
    Throw what;
    int expected;
  };
  for (const Kind kind :
       {Kind{Throw::kBadAlloc, ENOMEM}, Kind{Throw::kSystemError, EMFILE},
        Kind{Throw::kOther, EIO}}) {
    SCOPED_TRACE(kind.expected);
    ServedMount mount([&] {
      auto backend = std::make_unique<ThrowingBackend>();
      backend->set_throw(kind.what);
      return WithStats(
          std::make_unique<Filesystem>(Uncached(), std::move(backend)));
    });
    ASSERT_TRUE(mount.ok()) << "mounting failed";
    auto at = [&](const char* name) { return mount.Path(name); };
    int fd = open(at("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << strerror(errno);
    int fd2 = open(at("f").c_str(), O_RDWR);
    ASSERT_GE(fd2, 0) << strerror(errno);
    int dir = open(at("d").c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir, 0) << strerror(errno);
    char buf[4096] = {};
    struct stat st;
    struct statvfs vfs;
    const FailingCall calls[] = {
        {"lookup", [&] { return stat(at("boom").c_str(), &st); }},
        {"getattr", [&] { return stat(at("g").c_str(), &st); }},
        {"open", [&] { return open(at("g").c_str(), O_RDONLY); }},
        {"read", [&] { return pread(fd, buf, sizeof(buf), 0); }},
        {"write", [&] { return pwrite(fd, buf, sizeof(buf), 0); }},
        {"write, unaligned", [&] { return pwrite(fd, buf, 100, 1); }},
        {"fsync", [&] { return fsync(fd); }},
        {"fallocate", [&] { return fallocate(fd, 0, 0, 4096); }},
        {"lseek", [&] { return lseek(fd, 0, SEEK_DATA); }},
        {"setattr", [&] { return ftruncate(fd, 0); }},
        {"copy_file_range",
         [&] {
           loff_t in = 0, out = 16384;
           return copy_file_range(fd, &in, fd2, &out, 100, 0);
         }},
        {"flush", [&] { return close(fd); }},
        {"setxattr",
         [&] { return setxattr(at("f").c_str(), "user.a", "v", 1, 0); }},
        {"getxattr",
         [&] { return getxattr(at("f").c_str(), "user.a", buf, sizeof(buf)); }},
        {"listxattr",
         [&] { return listxattr(at("f").c_str(), buf, sizeof(buf)); }},
        {"removexattr", [&] { return removexattr(at("f").c_str(), "user.a"); }},
        {"mkdir", [&] { return mkdir(at("new-d").c_str(), 0755); }},
        {"mknod",
         [&] { return mknod(at("new-p").c_str(), S_IFIFO | 0644, 0); }},
        {"symlink", [&] { return symlink("x", at("new-s").c_str()); }},
        {"link", [&] { return link(at("f").c_str(), at("new-l").c_str()); }},
        {"create",
         [&] { return open(at("new-c").c_str(), O_CREAT | O_RDWR, 0644); }},
        {"unlink", [&] { return unlink(at("f").c_str()); }},
        {"rmdir", [&] { return rmdir(at("d").c_str()); }},
        {"rename",
         [&] { return rename(at("f").c_str(), at("new-r").c_str()); }},
        {"readlink",
         [&] { return readlink(at("l").c_str(), buf, sizeof(buf)); }},
        {"statfs", [&] { return statvfs(at("f").c_str(), &vfs); }},
        {"readdir",
         [&] { return syscall(SYS_getdents64, dir, buf, sizeof(buf)); }},
        {"fsyncdir", [&] { return fsync(dir); }},
    };
    for (const FailingCall& c : calls) {
      errno = 0;
      const long rc = c.call();
      const int err = errno;
      EXPECT_TRUE(rc == -1 && err == kind.expected)
          << c.name << ": " << Describe(rc, err) << ", expected errno "
          << kind.expected;
    }
    // Release and releasedir throw too; their replies reach nobody.
    close(fd2);
    close(dir);
    // Each failed request counts as an error in /.fgds/stats (each op
    // below throws on every call, so all its requests failed).
    const auto stats = ReadStats(at(".fgds/stats"));
    for (const char* op :
         {"read",      "write",           "fsync",   "fallocate", "lseek",
          "setattr",   "copy_file_range", "flush",   "setxattr",  "getxattr",
          "listxattr", "removexattr",     "mkdir",   "mknod",     "symlink",
          "link",      "create",          "unlink",  "rmdir",     "rename",
          "readlink",  "statfs",          "fsyncdir"}) {
      auto it = stats.find(op);
      ASSERT_NE(it, stats.end()) << op << " missing from the stats";
      EXPECT_GE(it->second.count, 1u) << op;
      EXPECT_EQ(it->second.errors, it->second.count)
          << op << ": failed requests counted as successes";
    }
    // Still serving, and it ends cleanly when unmounted.
    EXPECT_EQ(stat(at("f").c_str(), &st), 0) << strerror(errno);
    const int status = mount.Stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "server: " << ServerEnd(status);
  }
}

// A readdirplus whose backend throws after it placed entries (each one
// looked up, so counted by the backend): the entries must reach the kernel,
// which then holds and later forgets exactly those references. Before, the
// guard replied an error and the placed entries' lookups were never
// forgotten (a node pinned in the backend for good).
TEST_F(OpsTableTest, AReaddirplusThatThrowsPartWayKeepsLookupCountsExact) {
  // Shared with the forked server: lookups it counted minus forgets.
  void* shared =
      mmap(nullptr, sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* net = new (shared) std::atomic<int64_t>(0);
  {
    ServedMount mount([&] {
      auto backend = std::make_unique<ThrowingBackend>();
      backend->CountLookups(net);
      return std::make_unique<Filesystem>(Uncached(), std::move(backend));
    });
    ASSERT_TRUE(mount.ok()) << "mounting failed";
    const std::string root = mount.Path("");
    int dir = open(root.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir, 0) << strerror(errno);
    // The first getdents of a directory is a readdirplus: it returns the
    // two placed entries; the next one reports the backend's failure.
    char buf[4096];
    std::vector<std::string> names;
    long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
    const int first_errno = errno;
    for (long pos = 0; n > 0 && pos < n;) {
      auto* d = reinterpret_cast<dirent64*>(buf + pos);
      names.push_back(d->d_name);
      pos += d->d_reclen;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"f", "d"}))
        << "getdents: " << n << " " << strerror(first_errno);
    EXPECT_EQ(syscall(SYS_getdents64, dir, buf, sizeof(buf)), -1);
    close(dir);
    // The kernel forgets what it holds once its caches are dropped; then
    // the backend must hold no lookup of these entries either.
    for (int i = 0; i < 100 && net->load() != 0; ++i) {
      std::ofstream("/proc/sys/vm/drop_caches") << "2\n";
      usleep(20000);
    }
    EXPECT_EQ(net->load(), 0)
        << "lookups the backend counted and the kernel does not hold";
    const int status = mount.Stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "server: " << ServerEnd(status);
  }
  munmap(shared, sizeof(std::atomic<int64_t>));
}

TEST_F(OpsTableTest, BuffersOutOfMemoryFailReadsAndWritesWithEnomem) {
  ServedMount mount([] {
    return std::make_unique<Filesystem>(
        Uncached(), std::make_unique<ThrowingBackend>(), &NoMemory);
  });
  ASSERT_TRUE(mount.ok()) << "mounting failed";
  int fd = open(mount.Path("f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  char buf[4096] = {};
  // The backend would throw: these fail before it, for want of a buffer.
  EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), -1);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(pwrite(fd, buf, sizeof(buf), 0), -1);  // whole page: staged
  EXPECT_EQ(errno, ENOMEM);
  close(fd);
  struct stat st;
  EXPECT_EQ(stat(mount.Path("f").c_str(), &st), 0) << strerror(errno);
  const int status = mount.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "server: " << ServerEnd(status);
}

}  // namespace
}  // namespace fgds::fusefs
