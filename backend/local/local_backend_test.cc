#include "backend/local/local_backend.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

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
  EXPECT_EQ(SubmitAndWait(backend_->engine(), IoOp::kWrite,
                          backend_->FileFd(file), data, 7, 0),
            7);
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

}  // namespace
}  // namespace fgds::backend
