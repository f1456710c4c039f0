#include "backend/local/local_backend.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <semaphore>
#include <set>
#include <string>
#include <vector>

#include "backend/local/local_file.h"
#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

class WaitingCompletion : public FileIoCompletion {
 public:
  void Complete(int64_t result) override {
    result_ = result;
    ++calls_;
    done_.release();
  }
  int64_t Wait() {
    done_.acquire();
    return result_;
  }
  int calls() const { return calls_; }

 private:
  int64_t result_ = 0;
  std::atomic<int> calls_{0};
  std::binary_semaphore done_{0};
};

// One request through SubmitIo, waited for: bytes or -errno.
int64_t Transfer(Backend& backend, FileOp op, File* file, void* buf,
                 uint64_t len, uint64_t offset, uint32_t flags = 0,
                 IoPath* path = nullptr) {
  WaitingCompletion completion;
  FileIoRequest request{op,  file,   nullptr, static_cast<char*>(buf),
                        len, offset, flags,   &completion};
  backend.SubmitIo({&request, 1});
  int64_t result = completion.Wait();
  if (path != nullptr) *path = completion.path();
  return result;
}

// Page-aligned host memory, freed with the object.
struct Aligned {
  explicit Aligned(size_t size)
      : data(static_cast<char*>(std::aligned_alloc(4096, size))) {}
  ~Aligned() { std::free(data); }
  char* const data;
};

// While alive, this process can open exactly `spare` more descriptors (the
// soft limit is lowered to just above the spare slots); restores it after.
class FdBudget {
 public:
  explicit FdBudget(int spare) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    int free_slots = 0;
    int fd = 0;
    for (; free_slots < spare; ++fd) {
      if (fcntl(fd, F_GETFD) < 0) ++free_slots;
    }
    rlimit lowered = {static_cast<rlim_t>(fd), saved_.rlim_max};
    setrlimit(RLIMIT_NOFILE, &lowered);
  }
  ~FdBudget() { setrlimit(RLIMIT_NOFILE, &saved_); }
  FdBudget(const FdBudget&) = delete;
  FdBudget& operator=(const FdBudget&) = delete;

 private:
  rlimit saved_;
};

class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fgds-backend-test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    chmod(dir_.c_str(), 0777);
    auto backend = LocalBackend::Create(dir_, {});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
  }
  void TearDown() override {
    backend_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::unique_ptr<LocalBackend> backend_;
};

TEST_F(LocalBackendTest, CreateMissingDirectoryFailsWithPath) {
  auto backend = LocalBackend::Create("/nonexistent/fgds", {});
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("/nonexistent/fgds"),
            std::string::npos);
}

TEST_F(LocalBackendTest, CreateWriteLookupRead) {
  Caller root;
  Entry entry;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0640, O_RDWR, &entry, &file),
            0);
  EXPECT_TRUE(S_ISREG(entry.attr.st_mode));
  EXPECT_EQ(entry.attr.st_mode & 07777, 0640u);
  char data[] = "payload";
  EXPECT_EQ(Transfer(*backend_, FileOp::kWrite, file, data, 7, 0), 7);
  backend_->Release(file);

  Entry again;
  ASSERT_EQ(backend_->Lookup(kRootNode, "f", &again), 0);
  EXPECT_EQ(again.node, entry.node);  // one node per inode
  EXPECT_EQ(again.attr.st_size, 7);
  backend_->Forget(entry.node, 2);
  EXPECT_EQ(backend_->node_count(), 0u);
}

TEST_F(LocalBackendTest, LookupMissingIsEnoent) {
  Entry entry;
  EXPECT_EQ(backend_->Lookup(kRootNode, "missing", &entry), -ENOENT);
}

TEST_F(LocalBackendTest, CreatedObjectsBelongToTheCaller) {
  Caller nobody;
  nobody.uid = 65534;
  nobody.gid = 65534;
  Entry dir;
  ASSERT_EQ(backend_->MkDir(nobody, kRootNode, "d", 0755, &dir), 0);
  EXPECT_EQ(dir.attr.st_uid, 65534u);
  EXPECT_EQ(dir.attr.st_gid, 65534u);
  // The thread is root again afterwards: it can create in a 0700 dir.
  ASSERT_EQ(mkdir(Path("private").c_str(), 0700), 0);
  Entry priv;
  ASSERT_EQ(backend_->Lookup(kRootNode, "private", &priv), 0);
  Caller root;
  Entry inner;
  EXPECT_EQ(backend_->MkDir(root, priv.node, "inner", 0755, &inner), 0);
  // And the caller's own permissions apply to what it creates.
  Entry denied;
  EXPECT_EQ(backend_->MkDir(nobody, priv.node, "x", 0755, &denied), -EACCES);
}

TEST_F(LocalBackendTest, RenameFlags) {
  Caller root;
  Entry a, b;
  ASSERT_EQ(backend_->MkNod(root, kRootNode, "a", S_IFREG | 0644, 0, &a), 0);
  ASSERT_EQ(backend_->MkDir(root, kRootNode, "b", 0755, &b), 0);
  EXPECT_EQ(backend_->Rename(kRootNode, "a", kRootNode, "b", RENAME_NOREPLACE),
            -EEXIST);
  EXPECT_EQ(backend_->Rename(kRootNode, "a", kRootNode, "b", RENAME_EXCHANGE),
            0);
  struct stat st;
  ASSERT_EQ(stat(Path("a").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST_F(LocalBackendTest, RenameWhiteoutLeavesAWhiteoutDevice) {
  Caller root;
  Entry a;
  ASSERT_EQ(backend_->MkNod(root, kRootNode, "a", S_IFREG | 0644, 0, &a), 0);
  ASSERT_EQ(backend_->Rename(kRootNode, "a", kRootNode, "b", RENAME_WHITEOUT),
            0);
  struct stat st;
  ASSERT_EQ(lstat(Path("a").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  ASSERT_EQ(lstat(Path("b").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(LocalBackendTest, TmpFileHasNoNameUntilLinked) {
  Caller root;
  Entry entry;
  File* file = nullptr;
  const int res =
      backend_->TmpFile(root, kRootNode, 0600, O_RDWR, &entry, &file);
  if (res == -EOPNOTSUPP) GTEST_SKIP() << "no O_TMPFILE on " << dir_;
  ASSERT_EQ(res, 0);
  EXPECT_TRUE(S_ISREG(entry.attr.st_mode));
  EXPECT_EQ(entry.attr.st_nlink, 0u);
  EXPECT_EQ(entry.attr.st_mode & 07777, 0600u);
  char data[] = "tmp";
  EXPECT_EQ(Transfer(*backend_, FileOp::kWrite, file, data, 3, 0), 3);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  // linkat(2) of the open file reaches the backend as Link of its node.
  Entry linked;
  ASSERT_EQ(backend_->Link(entry.node, kRootNode, "named", &linked), 0);
  EXPECT_EQ(linked.node, entry.node);
  EXPECT_EQ(linked.attr.st_nlink, 1u);
  backend_->Release(file);
  backend_->Forget(entry.node, 2);
  struct stat st;
  ASSERT_EQ(stat(Path("named").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 3);
  // A caller's mode and ownership apply as for any create; a directory
  // that is not one fails.
  Entry file_entry;
  File* plain = nullptr;
  ASSERT_EQ(
      backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &file_entry, &plain),
      0);
  backend_->Release(plain);
  EXPECT_EQ(
      backend_->TmpFile(root, file_entry.node, 0600, O_RDWR, &entry, &file),
      -ENOTDIR);
  backend_->Forget(file_entry.node, 1);
}

TEST_F(LocalBackendTest, HoldsEntryWhileTheKernelHoldsTheNode) {
  Caller root;
  Entry dir, entry;
  ASSERT_EQ(backend_->MkDir(root, kRootNode, "d", 0755, &dir), 0);
  ASSERT_EQ(mknod(Path("d/f").c_str(), S_IFREG | 0644, 0), 0);
  struct stat st;
  ASSERT_EQ(stat(Path("d/f").c_str(), &st), 0);
  EXPECT_FALSE(backend_->HoldsEntry(dir.node, st.st_ino));
  ASSERT_EQ(backend_->Lookup(dir.node, "f", &entry), 0);
  EXPECT_TRUE(backend_->HoldsEntry(dir.node, st.st_ino));
  backend_->Forget(entry.node, 1);
  EXPECT_FALSE(backend_->HoldsEntry(dir.node, st.st_ino));
  backend_->Forget(dir.node, 1);
}

TEST_F(LocalBackendTest, FlushOnlyWhereCloseDoesSomething) {
  Caller root;
  Entry entry;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &entry, &file),
            0);
  struct statfs sfs;
  ASSERT_EQ(statfs(dir_.c_str(), &sfs), 0);
  // /tmp is ext4 or tmpfs on every machine this runs on; both need none.
  const bool local = sfs.f_type == 0xEF53 || sfs.f_type == 0x01021994 ||
                     sfs.f_type == 0x58465342;
  EXPECT_EQ(backend_->NeedsFlush(file), !local);
  EXPECT_EQ(backend_->Flush(file), 0);  // still works when asked
  backend_->Release(file);
  backend_->Forget(entry.node, 1);
}

TEST_F(LocalBackendTest, ReadDirResumesAtOffset) {
  Caller root;
  for (const char* name : {"x", "y", "z"}) {
    Entry e;
    ASSERT_EQ(backend_->MkNod(root, kRootNode, name, S_IFREG | 0644, 0, &e), 0);
  }
  Dir* dir = nullptr;
  ASSERT_EQ(backend_->OpenDir(kRootNode, &dir), 0);
  std::set<std::string> names;
  off_t resume = 0;
  // Take one entry per call, as a kernel with a tiny buffer would.
  for (int call = 0; call < 10; ++call) {
    bool took = false;
    ASSERT_EQ(backend_->ReadDir(dir, resume,
                                [&](const DirEntry& e) {
                                  if (took) return false;
                                  took = true;
                                  names.insert(e.name);
                                  resume = e.next_offset;
                                  return true;
                                }),
              0);
    if (!took) break;
  }
  backend_->ReleaseDir(dir);
  EXPECT_EQ(names, (std::set<std::string>{".", "..", "x", "y", "z"}));
}

TEST_F(LocalBackendTest, XattrRoundTripAndErrors) {
  Caller root;
  Entry e;
  ASSERT_EQ(backend_->MkNod(root, kRootNode, "f", S_IFREG | 0644, 0, &e), 0);
  ASSERT_EQ(backend_->SetXattr(e.node, "user.k", "v1", 2, 0), 0);
  EXPECT_EQ(backend_->SetXattr(e.node, "user.k", "v2", 2, XATTR_CREATE),
            -EEXIST);
  EXPECT_EQ(backend_->GetXattr(e.node, "user.k", nullptr, 0), 2);
  char small[1];
  EXPECT_EQ(backend_->GetXattr(e.node, "user.k", small, 1), -ERANGE);
  EXPECT_EQ(backend_->GetXattr(e.node, "user.none", nullptr, 0), -ENODATA);
  EXPECT_EQ(backend_->RemoveXattr(e.node, "user.k"), 0);
}

TEST_F(LocalBackendTest, KeepCacheOnlyWhenUnchangedOutsideMount) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &e, &file), 0);
  backend_->Release(file);
  ASSERT_EQ(backend_->Open(e.node, O_RDONLY, &file), 0);
  EXPECT_TRUE(backend_->KeepCache(file));
  backend_->Release(file);
  // A write behind the daemon's back must drop the kernel's cached pages.
  int fd = open(Path("f").c_str(), O_WRONLY);
  ASSERT_EQ(write(fd, "changed", 7), 7);
  close(fd);
  ASSERT_EQ(backend_->Open(e.node, O_RDONLY, &file), 0);
  EXPECT_FALSE(backend_->KeepCache(file));
  backend_->Release(file);
}

// The kernel writes a FUSE file's dirty pages back through any writable
// handle of it, partial pages included: a handle opened with O_DIRECT must
// still take unaligned writes (its twin takes the aligned ones).
TEST_F(LocalBackendTest, ODirectOpenerTakesUnalignedWrites) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR | O_DIRECT, &e,
                             &file),
            0);
  char small[100];
  memset(small, 'x', sizeof(small));
  IoPath path = IoPath::kNone;
  FileIoRequest request{FileOp::kWrite, file, nullptr,        small,
                        sizeof(small),  0,    kIoPreferDirect};
  EXPECT_EQ(backend_->RunIo(request, &path), 100);
  EXPECT_EQ(path, IoPath::kPageCache);
  EXPECT_EQ(Transfer(*backend_, FileOp::kWrite, file, small, 100, 100,
                     kIoPreferDirect, &path),
            100);
  EXPECT_EQ(path, IoPath::kPageCache);
  EXPECT_EQ(backend_->Fsync(file, false), 0);
  Aligned page(4096);
  memset(page.data, 'y', 4096);
  const int64_t res = Transfer(*backend_, FileOp::kWrite, file, page.data, 4096,
                               4096, kIoPreferDirect, &path);
  EXPECT_EQ(res, 4096);
  // The twin exists where the backing filesystem has O_DIRECT.
  int probe = open(Path("f").c_str(), O_RDONLY | O_DIRECT);
  if (probe >= 0) {
    close(probe);
    EXPECT_EQ(path, IoPath::kDirect);
  } else {
    EXPECT_EQ(path, IoPath::kPageCache);
  }
  backend_->Release(file);
  struct stat st;
  ASSERT_EQ(stat(Path("f").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8192);
}

TEST_F(LocalBackendTest, SubmitIoCompletesEachRequestOnceWithItsPath) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &e, &file), 0);
  Aligned data(8192);
  memset(data.data, 'z', 8192);
  ASSERT_EQ(Transfer(*backend_, FileOp::kWrite, file, data.data, 8192, 0),
            8192);
  // Device memory may only be reached O_DIRECT: an unaligned request on it
  // is refused, and so is one for a file on another device than its route.
  MemoryRegion device(data.data, 8192, MemoryRegion::Kind::kDevice,
                      makedev(259, 77));
  WaitingCompletion done[4];
  std::vector<FileIoRequest> batch = {
      {FileOp::kRead, file, nullptr, data.data, 100, 0, 0, &done[0]},
      {FileOp::kRead, file, &device, data.data + 1, 100, 0, kIoPreferDirect,
       &done[1]},
      {FileOp::kRead, file, &device, data.data, 4096, 0, kIoPreferDirect,
       &done[2]},
      {FileOp::kFsync, file, nullptr, nullptr, 0, 0, 0, &done[3]},
  };
  backend_->SubmitIo(batch);
  EXPECT_EQ(done[0].Wait(), 100);
  EXPECT_EQ(done[0].path(), IoPath::kPageCache);
  EXPECT_EQ(done[1].Wait(), -EINVAL);
  // No twin (tmpfs): -EOPNOTSUPP; else the route check: -EXDEV.
  const int64_t routed = done[2].Wait();
  EXPECT_TRUE(routed == -EXDEV || routed == -EOPNOTSUPP) << routed;
  EXPECT_EQ(done[3].Wait(), 0);
  EXPECT_EQ(done[3].path(), IoPath::kNone);
  for (auto& d : done) EXPECT_EQ(d.calls(), 1);
  backend_->Release(file);
}

// kIoInlineIfCached (issue 17): a read of cached pages completes inside
// SubmitIo, on the caller's thread; reads the page cache cannot serve
// whole (end of file, pages not cached) still complete right, through the
// engine; writes ignore the flag.
TEST_F(LocalBackendTest, CachedReadsMayCompleteInsideSubmitIo) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &e, &file), 0);
  Aligned data(3 * 4096);
  for (int i = 0; i < 8192; ++i) data.data[i] = static_cast<char>(i * 7);
  ASSERT_EQ(Transfer(*backend_, FileOp::kWrite, file, data.data, 8192, 0,
                     kIoInlineIfCached),
            8192);
  Aligned got(3 * 4096);
  memset(got.data, 0, 3 * 4096);

  // Just written, so cached: done before SubmitIo returns.
  WaitingCompletion cached;
  FileIoRequest request{FileOp::kRead, file, nullptr,           got.data,
                        4096,          100,  kIoInlineIfCached, &cached};
  backend_->SubmitIo({&request, 1});
  EXPECT_EQ(cached.calls(), 1) << "not completed inline";
  EXPECT_EQ(cached.Wait(), 4096);
  EXPECT_EQ(cached.path(), IoPath::kPageCache);
  EXPECT_EQ(memcmp(got.data, data.data + 100, 4096), 0);

  // End of file: what pread says, whichever way it went.
  EXPECT_EQ(Transfer(*backend_, FileOp::kRead, file, got.data, 8192, 4096,
                     kIoInlineIfCached),
            4096);
  EXPECT_EQ(memcmp(got.data, data.data + 4096, 4096), 0);
  EXPECT_EQ(Transfer(*backend_, FileOp::kRead, file, got.data, 4096, 8192,
                     kIoInlineIfCached),
            0);

  // Larger reads go to the engine, which copies them on several threads.
  Aligned big(256 << 10);
  Aligned big_got(256 << 10);
  for (int i = 0; i < (256 << 10); ++i) big.data[i] = static_cast<char>(i);
  ASSERT_EQ(
      Transfer(*backend_, FileOp::kWrite, file, big.data, 256 << 10, 8192),
      256 << 10);
  IoPath path = IoPath::kNone;
  EXPECT_EQ(Transfer(*backend_, FileOp::kRead, file, big_got.data, 256 << 10,
                     8192, kIoInlineIfCached, &path),
            256 << 10);
  EXPECT_EQ(path, IoPath::kPageCache);
  EXPECT_EQ(memcmp(big_got.data, big.data, 256 << 10), 0);

  // Dropped from the page cache (where the file system lets it go): the
  // engine reads it from the disk.
  ASSERT_EQ(fsync(file->fd), 0);
  posix_fadvise(file->fd, 0, 0, POSIX_FADV_DONTNEED);
  memset(got.data, 0, 8192);
  EXPECT_EQ(Transfer(*backend_, FileOp::kRead, file, got.data, 8192, 0,
                     kIoInlineIfCached),
            8192);
  EXPECT_EQ(memcmp(got.data, data.data, 8192), 0);
  backend_->Release(file);
}

TEST_F(LocalBackendTest, KillPrivilegesClearsSetIdBitsAsWriteDoes) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0777, O_RDWR, &e, &file), 0);
  auto mode = [&] {
    struct stat st;
    return stat(Path("f").c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  };
  char data[] = "x";
  // Without the flag (a privileged writer) the bits stay.
  ASSERT_EQ(chmod(Path("f").c_str(), 06777), 0);
  ASSERT_EQ(Transfer(*backend_, FileOp::kWrite, file, data, 1, 0), 1);
  EXPECT_EQ(mode(), 06777u);
  // A read asking for it changes nothing.
  ASSERT_EQ(
      Transfer(*backend_, FileOp::kRead, file, data, 1, 0, kIoKillPrivileges),
      1);
  EXPECT_EQ(mode(), 06777u);
  // A write: S_ISUID goes, and S_ISGID with group-execute.
  ASSERT_EQ(
      Transfer(*backend_, FileOp::kWrite, file, data, 1, 0, kIoKillPrivileges),
      1);
  EXPECT_EQ(mode(), 0777u);
  // Without group-execute S_ISGID stays (RunIo, the synchronous path).
  ASSERT_EQ(chmod(Path("f").c_str(), 06767), 0);
  FileIoRequest request{FileOp::kWrite,   file, nullptr, data, 1, 0,
                        kIoKillPrivileges};
  IoPath path;
  ASSERT_EQ(backend_->RunIo(request, &path), 1);
  EXPECT_EQ(mode(), 02767u);
  // A batch of writes to one file clears once and writes every request.
  ASSERT_EQ(chmod(Path("f").c_str(), 04777), 0);
  WaitingCompletion done[3];
  std::vector<FileIoRequest> batch;
  for (uint64_t i = 0; i < 3; ++i) {
    batch.push_back({FileOp::kWrite, file, nullptr, data, 1, i,
                     kIoKillPrivileges, &done[i]});
  }
  backend_->SubmitIo(batch);
  for (auto& d : done) EXPECT_EQ(d.Wait(), 1);
  EXPECT_EQ(mode(), 0777u);
  backend_->Release(file);
}

TEST_F(LocalBackendTest, DefaultAclReplacesTheUmask) {
  Caller creator;
  creator.umask = 022;
  Entry plain;
  ASSERT_EQ(backend_->MkDir(creator, kRootNode, "plain", 0777, &plain), 0);
  EXPECT_EQ(plain.attr.st_mode & 07777, 0755u) << "umask applies";
  // A default ACL u::rwx g::rwx o::rwx (no mask needed without named
  // entries) on a directory: what is created in it ignores the umask.
  struct {
    uint32_t version;
    struct {
      uint16_t tag, perm;
      uint32_t id;
    } entries[3];
  } acl = {2, {{0x01, 7, ~0u}, {0x04, 7, ~0u}, {0x20, 7, ~0u}}};
  Entry dir;
  ASSERT_EQ(backend_->MkDir(Caller{}, kRootNode, "acl", 0777, &dir), 0);
  if (setxattr(Path("acl").c_str(), "system.posix_acl_default", &acl,
               sizeof(acl), 0) != 0) {
    GTEST_SKIP() << "no POSIX ACLs on " << dir_ << ": " << strerror(errno);
  }
  Entry inner;
  ASSERT_EQ(backend_->MkDir(creator, dir.node, "d", 0777, &inner), 0);
  EXPECT_EQ(inner.attr.st_mode & 07777, 0777u) << "default ACL, no umask";
  Entry file_entry;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(creator, dir.node, "f", 0666, O_RDWR, &file_entry,
                             &file),
            0);
  EXPECT_EQ(file_entry.attr.st_mode & 07777, 0666u);
  backend_->Release(file);
}

// A usrbio registration holds its own lookup: the kernel forgetting the
// node must not free what the handle points to.
TEST_F(LocalBackendTest, OpenNodeOutlivesTheKernelsLookups) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "f", 0644, O_RDWR, &e, &file), 0);
  backend_->Release(file);
  File* registered = nullptr;
  ASSERT_EQ(backend_->OpenNode(e.node, O_RDWR, &registered), 0);
  EXPECT_EQ(backend_->NodeOf(registered), e.node);
  backend_->Forget(e.node, 1);
  EXPECT_EQ(backend_->node_count(), 1u);
  char data[] = "still here";
  EXPECT_EQ(Transfer(*backend_, FileOp::kWrite, registered, data, 10, 0), 10);
  backend_->Release(registered);
  EXPECT_EQ(backend_->node_count(), 0u);
}

// Only files of the backing directory can be registered: the daemon's own
// virtual files (ids below kFirstNodeId) and directories are refused.
TEST_F(LocalBackendTest, OpenNodeRefusesControlNodesAndDirectories) {
  File* registered = nullptr;
  for (NodeId control = 2; control < kFirstNodeId; control += 97) {
    EXPECT_EQ(backend_->OpenNode(control, O_RDONLY, &registered), -EPERM)
        << control;
  }
  EXPECT_EQ(backend_->OpenNode(kRootNode, O_RDONLY, &registered), -EINVAL);
  Caller root;
  Entry dir;
  ASSERT_EQ(backend_->MkDir(root, kRootNode, "d", 0755, &dir), 0);
  EXPECT_EQ(backend_->OpenNode(dir.node, O_RDONLY, &registered), -EINVAL);
  backend_->Forget(dir.node, 1);
  EXPECT_EQ(backend_->node_count(), 0u);
}

// A create that fails after the backing file was made (here: the
// descriptor limit, reached one step later) removes it again: the caller
// was told it failed, and a retry with O_EXCL must not meet EEXIST.
TEST_F(LocalBackendTest, FailedCreatesLeaveNothingBehind) {
  Caller root;
  Entry sub;
  ASSERT_EQ(backend_->MkDir(root, kRootNode, "sub", 0755, &sub), 0);
  for (NodeId parent : {kRootNode, sub.node}) {
    const std::string dir = parent == kRootNode ? dir_ : Path("sub");
    int failed = 0;
    for (int spare = 0; spare < 4; ++spare) {
      const std::string name = "f" + std::to_string(spare);
      const size_t nodes = backend_->node_count();
      Entry e;
      File* file = nullptr;
      int ret;
      {
        FdBudget budget(spare);
        ret = backend_->Create(root, parent, name.c_str(), 0644,
                               O_RDWR | O_EXCL, &e, &file);
      }
      if (ret == 0) {
        backend_->Release(file);
        backend_->Forget(e.node, 1);
        continue;
      }
      ++failed;
      EXPECT_EQ(ret, -EMFILE);
      struct stat st;
      EXPECT_NE(lstat((dir + "/" + name).c_str(), &st), 0)
          << name << " left behind with " << spare << " spare descriptors";
      EXPECT_EQ(backend_->node_count(), nodes);
      ASSERT_EQ(backend_->Create(root, parent, name.c_str(), 0644,
                                 O_RDWR | O_EXCL, &e, &file),
                0);
      backend_->Release(file);
      backend_->Forget(e.node, 1);
    }
    EXPECT_GE(failed, 2);  // the open itself, and the step after it
  }
  backend_->Forget(sub.node, 1);
}

TEST_F(LocalBackendTest, FailedMkdirSymlinkAndMknodLeaveNothingBehind) {
  Caller root;
  Entry e;
  int results[3];
  // A member call before the budget: UBSan's vptr check needs a descriptor
  // (a pipe) the first time it meets a type, and would fail under it.
  ASSERT_EQ(backend_->node_count(), 0u);
  {
    FdBudget budget(0);  // creating needs none; registering the result one
    results[0] = backend_->MkDir(root, kRootNode, "d", 0755, &e);
    results[1] = backend_->SymLink(root, "target", kRootNode, "l", &e);
    results[2] = backend_->MkNod(root, kRootNode, "p", S_IFIFO | 0644, 0, &e);
  }
  for (int result : results) EXPECT_EQ(result, -EMFILE);
  struct stat st;
  for (const char* name : {"d", "l", "p"}) {
    EXPECT_NE(lstat(Path(name).c_str(), &st), 0) << name << " left behind";
  }
  EXPECT_EQ(backend_->node_count(), 0u);
}

// An open file stays reachable by its node after its last name is removed
// (fstat, fchmod, xattrs on the open file), and after its close too, until
// the kernel forgets the node: it may still write back times then, as it
// could on a local filesystem.
TEST_F(LocalBackendTest, UnlinkedOpenFileStaysReachable) {
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "u", 0644, O_RDWR, &e, &file), 0);
  ASSERT_EQ(backend_->Unlink(kRootNode, "u"), 0);
  struct stat st;
  ASSERT_EQ(backend_->GetAttr(e.node, &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  SetAttrRequest chmod_request;
  chmod_request.valid = kSetMode;
  chmod_request.attr.st_mode = 0600;
  ASSERT_EQ(backend_->SetAttr(e.node, chmod_request, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  backend_->Release(file);
  ASSERT_EQ(backend_->GetAttr(e.node, &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  backend_->Forget(e.node, 1);
  EXPECT_EQ(backend_->node_count(), 0u);
}

// A closed file whose last name the mount removes (unlink, or a rename
// over it) lives on while the kernel knows its node: with the writeback
// cache the kernel writes back its times after the unlink, and a failure
// there would surface as a writeback error (syncfs returning ENOENT).
TEST_F(LocalBackendTest, FileUnlinkedThroughTheMountLivesUntilForgotten) {
  Caller root;
  std::vector<NodeId> nodes;
  for (const char* name : {"gone", "replaced", "other"}) {
    Entry e;
    File* file = nullptr;
    ASSERT_EQ(backend_->Create(root, kRootNode, name, 0644, O_RDWR, &e, &file),
              0);
    backend_->Release(file);
    nodes.push_back(e.node);
  }
  ASSERT_EQ(backend_->Unlink(kRootNode, "gone"), 0);
  ASSERT_EQ(backend_->Rename(kRootNode, "other", kRootNode, "replaced", 0), 0);
  for (NodeId node : {nodes[0], nodes[1]}) {
    SetAttrRequest times;
    times.valid = kSetMtimeNow;
    struct stat st;
    ASSERT_EQ(backend_->SetAttr(node, times, &st), 0);
    EXPECT_EQ(st.st_nlink, 0u);
  }
  for (NodeId node : nodes) backend_->Forget(node, 1);
  EXPECT_EQ(backend_->node_count(), 0u);
}

// A file removed behind the mount's back (in the backing directory) is
// gone for its node once closed: no descriptor keeps it.
TEST_F(LocalBackendTest, FileRemovedInTheBackingDirectoryIsGoneForItsNode) {
  if (!backend_->uses_file_handles()) GTEST_SKIP() << "nodes pin descriptors";
  Caller root;
  Entry e;
  File* file = nullptr;
  ASSERT_EQ(backend_->Create(root, kRootNode, "r", 0644, O_RDWR, &e, &file), 0);
  backend_->Release(file);
  ASSERT_EQ(unlink(Path("r").c_str()), 0);
  struct stat st;
  EXPECT_EQ(backend_->GetAttr(e.node, &st), -ENOENT);
  File* reopened = nullptr;
  EXPECT_EQ(backend_->Open(e.node, O_RDONLY, &reopened), -ENOENT);
  backend_->Forget(e.node, 1);
}

// Root in the backing directory's filesystem (the daemon's case) reaches
// nodes by file handle, so a node the kernel knows holds no descriptor.
TEST_F(LocalBackendTest, NodesAreFileHandlesWherePrivilegeAllows) {
  if (geteuid() != 0) GTEST_SKIP() << "open_by_handle_at needs root";
  EXPECT_TRUE(backend_->uses_file_handles());
}

}  // namespace
}  // namespace fgds::backend
