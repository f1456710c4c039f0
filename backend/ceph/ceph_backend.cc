// CephBackend: the namespace through ceph_ll_* calls, file data through
// IoPool. Every Inode* held in nodes_ carries one libcephfs reference,
// dropped (ceph_ll_put) when the kernel forgets the node.
#include "backend/ceph/ceph_backend.h"

#include <cephfs/libcephfs.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backend/ceph/io_pool.h"
#include "backend/ceph/node_ids.h"

namespace fgds::backend {

// The opaque handles of backend.h, as this backend defines them. They are
// not the local backend's File/Dir (one definition each per program), so
// the handles cross the interface as casts of these.
struct CephFile {
  Fh* fh;
  Inode* in;
  NodeId node;
  bool holds_lookup;
};
struct CephDir {
  ceph_dir_result* dirp;
  NodeId node;
};

namespace {

constexpr unsigned kWant = CEPH_STATX_BASIC_STATS;

CephFile* Of(File* file) { return reinterpret_cast<CephFile*>(file); }
File* Handle(CephFile* file) { return reinterpret_cast<File*>(file); }
CephDir* Of(Dir* dir) { return reinterpret_cast<CephDir*>(dir); }

// A Caller's credentials as libcephfs takes them.
class CallerPerm {
 public:
  explicit CallerPerm(const Caller& caller) {
    std::vector<gid_t> groups = caller.groups;
    perm_ = ceph_userperm_new(caller.uid, caller.gid,
                              static_cast<int>(groups.size()),
                              groups.empty() ? nullptr : groups.data());
  }
  ~CallerPerm() {
    if (perm_ != nullptr) ceph_userperm_destroy(perm_);
  }
  CallerPerm(const CallerPerm&) = delete;
  CallerPerm& operator=(const CallerPerm&) = delete;
  const UserPerm* get() const { return perm_; }

 private:
  UserPerm* perm_;
};

class CephBackend : public Backend {
 public:
  CephBackend(ceph_mount_info* cmount, Inode* root, uint64_t root_ino,
              unsigned io_threads)
      : cmount_(cmount),
        perms_(ceph_mount_perms(cmount)),
        root_ino_(root_ino),
        pool_(std::make_unique<IoPool>(io_threads)) {
    nodes_[kCephRootNode] = {root, 1};
  }
  ~CephBackend() override {
    // Jobs still queued run against the mount: drain them before it goes.
    pool_.reset();
    {
      absl::MutexLock lock(&mu_);
      for (auto& [id, node] : nodes_) ceph_ll_put(cmount_, node.in);
      nodes_.clear();
    }
    ceph_unmount(cmount_);
    ceph_release(cmount_);
  }

  NodeId root() const override { return kCephRootNode; }
  std::string EngineName() const override {
    return absl::StrCat("libcephfs(", pool_->threads(), " threads)");
  }

  int Lookup(NodeId parent, const char* name, Entry* out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    Inode* in = nullptr;
    struct ceph_statx stx = {};
    int res = ceph_ll_lookup(cmount_, dir, name, &in, &stx, kWant, 0, perms_);
    if (res < 0) return res;
    return Register(in, stx, out);
  }

  void Forget(NodeId node, uint64_t count) override {
    if (node == kCephRootNode) return;
    Inode* drop = nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto it = nodes_.find(node);
      if (it == nodes_.end()) return;
      if (it->second.lookups > count) {
        it->second.lookups -= count;
        return;
      }
      drop = it->second.in;
      nodes_.erase(it);
    }
    ceph_ll_put(cmount_, drop);
  }

  int GetAttr(NodeId node, struct stat* out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    struct ceph_statx stx = {};
    int res = ceph_ll_getattr(cmount_, in, &stx, kWant, 0, perms_);
    if (res < 0) return res;
    ToStat(stx, out);
    return 0;
  }

  int SetAttr(NodeId node, const SetAttrRequest& request,
              struct stat* out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    struct ceph_statx stx = {};
    int mask = 0;
    const struct stat& a = request.attr;
    if (request.valid & kSetMode) {
      mask |= CEPH_SETATTR_MODE;
      stx.stx_mode = static_cast<uint16_t>(a.st_mode);
    }
    if (request.valid & kSetUid) {
      mask |= CEPH_SETATTR_UID;
      stx.stx_uid = a.st_uid;
    }
    if (request.valid & kSetGid) {
      mask |= CEPH_SETATTR_GID;
      stx.stx_gid = a.st_gid;
    }
    if (request.valid & kSetSize) {
      mask |= CEPH_SETATTR_SIZE;
      stx.stx_size = static_cast<uint64_t>(a.st_size);
    }
    // libcephfs 16's ll_setattrx ignores CEPH_SETATTR_[AM]TIME_NOW (the
    // times stayed as they were: posix_semantics_test's Utimens scenario
    // over ceph), so "now" is this client's clock, as ceph-fuse sends it.
    struct timespec now = {};
    clock_gettime(CLOCK_REALTIME, &now);
    if (request.valid & kSetAtimeNow) {
      mask |= CEPH_SETATTR_ATIME;
      stx.stx_atime = now;
    } else if (request.valid & kSetAtime) {
      mask |= CEPH_SETATTR_ATIME;
      stx.stx_atime = a.st_atim;
    }
    if (request.valid & kSetMtimeNow) {
      mask |= CEPH_SETATTR_MTIME;
      stx.stx_mtime = now;
    } else if (request.valid & kSetMtime) {
      mask |= CEPH_SETATTR_MTIME;
      stx.stx_mtime = a.st_mtim;
    }
    if (request.valid & kSetCtime) {
      mask |= CEPH_SETATTR_CTIME;
      stx.stx_ctime = a.st_ctim;
    }
    if (mask != 0) {
      int res = ceph_ll_setattr(cmount_, in, &stx, mask, perms_);
      if (res < 0) return res;
    }
    return GetAttr(node, out);
  }

  int ReadLink(NodeId node, std::string* target) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    char buf[PATH_MAX];
    int res = ceph_ll_readlink(cmount_, in, buf, sizeof(buf), perms_);
    if (res < 0) return res;
    target->assign(buf, static_cast<size_t>(res));
    return 0;
  }

  int MkNod(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            dev_t rdev, Entry* out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallerPerm perm(caller);
    Inode* in = nullptr;
    struct ceph_statx stx = {};
    int res = ceph_ll_mknod(cmount_, dir, name, mode & ~caller.umask, rdev, &in,
                            &stx, kWant, 0, perm.get());
    if (res < 0) return res;
    return Register(in, stx, out);
  }

  int MkDir(const Caller& caller, NodeId parent, const char* name, mode_t mode,
            Entry* out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallerPerm perm(caller);
    Inode* in = nullptr;
    struct ceph_statx stx = {};
    int res = ceph_ll_mkdir(cmount_, dir, name, mode & ~caller.umask, &in, &stx,
                            kWant, 0, perm.get());
    if (res < 0) return res;
    return Register(in, stx, out);
  }

  int SymLink(const Caller& caller, const char* target, NodeId parent,
              const char* name, Entry* out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallerPerm perm(caller);
    Inode* in = nullptr;
    struct ceph_statx stx = {};
    int res = ceph_ll_symlink(cmount_, dir, name, target, &in, &stx, kWant, 0,
                              perm.get());
    if (res < 0) return res;
    return Register(in, stx, out);
  }

  int Link(NodeId node, NodeId new_parent, const char* new_name,
           Entry* out) override {
    Inode* in = Get(node);
    Inode* dir = Get(new_parent);
    if (in == nullptr || dir == nullptr) return -ESTALE;
    int res = ceph_ll_link(cmount_, in, dir, new_name, perms_);
    if (res < 0) return res;
    return Lookup(new_parent, new_name, out);
  }

  int Unlink(NodeId parent, const char* name) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    return ceph_ll_unlink(cmount_, dir, name, perms_);
  }

  int RmDir(NodeId parent, const char* name) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    return ceph_ll_rmdir(cmount_, dir, name, perms_);
  }

  int Rename(NodeId parent, const char* name, NodeId new_parent,
             const char* new_name, unsigned flags) override {
    // libcephfs 16 has no RENAME_NOREPLACE or RENAME_EXCHANGE.
    if (flags != 0) return -EINVAL;
    Inode* from = Get(parent);
    Inode* to = Get(new_parent);
    if (from == nullptr || to == nullptr) return -ESTALE;
    return ceph_ll_rename(cmount_, from, name, to, new_name, perms_);
  }

  int StatFs(NodeId node, struct statvfs* out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    return ceph_ll_statfs(cmount_, in, out);
  }

  int SetXattr(NodeId node, const char* name, const void* value, size_t size,
               int flags) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    return ceph_ll_setxattr(cmount_, in, name, value, size, flags, perms_);
  }
  int GetXattr(NodeId node, const char* name, void* value,
               size_t size) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    int res = ceph_ll_getxattr(cmount_, in, name, value, size, perms_);
    // libcephfs without client_acl_type refuses every system.* name; the
    // kernel asks for the parent's default ACL before each create, and
    // "none" is the answer that lets the create go on.
    if (res == -EOPNOTSUPP && absl::StartsWith(name, "system.posix_acl_")) {
      return -ENODATA;
    }
    return res;
  }
  int ListXattr(NodeId node, char* list, size_t size) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    size_t used = 0;
    int res = ceph_ll_listxattr(cmount_, in, list, size, &used, perms_);
    return res < 0 ? res : static_cast<int>(used);
  }
  int RemoveXattr(NodeId node, const char* name) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    return ceph_ll_removexattr(cmount_, in, name, perms_);
  }

  int Open(NodeId node, int flags, File** out) override {
    return OpenFile(node, flags, false, out);
  }

  int OpenNode(NodeId node, int flags, File** out) override {
    {
      absl::MutexLock lock(&mu_);
      auto it = nodes_.find(node);
      if (it == nodes_.end()) return -EPERM;
      ++it->second.lookups;  // the handle's own, given back by Release
    }
    int res = OpenFile(node, flags, true, out);
    if (res < 0) Forget(node, 1);
    return res;
  }

  int Create(const Caller& caller, NodeId parent, const char* name, mode_t mode,
             int flags, Entry* entry, File** out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallerPerm perm(caller);
    Inode* in = nullptr;
    Fh* fh = nullptr;
    struct ceph_statx stx = {};
    int res = ceph_ll_create(cmount_, dir, name, mode & ~caller.umask,
                             OpenFlags(flags) | O_CREAT | (flags & O_EXCL), &in,
                             &fh, &stx, kWant, 0, perm.get());
    if (res < 0) return res;
    res = Register(in, stx, entry);
    if (res < 0) {
      ceph_ll_close(cmount_, fh);
      return res;
    }
    *out = Handle(new CephFile{fh, nullptr, entry->node, false});
    return 0;
  }

  int Flush(File*) override { return 0; }

  void Release(File* file) override {
    CephFile* f = Of(file);
    ceph_ll_close(cmount_, f->fh);
    if (f->holds_lookup) Forget(f->node, 1);
    delete f;
  }

  void SubmitIo(std::span<const FileIoRequest> batch) override {
    for (const FileIoRequest& request : batch) {
      if (int err = Refuse(request); err != 0) {
        request.completion->set_path(IoPath::kNone);
        request.completion->Complete(err);
        continue;
      }
      request.completion->set_path(PathOf(request.op));
      pool_->Submit([this, request] {
        IoPath path;
        int64_t res = Move(request, &path);
        request.completion->set_path(path);
        request.completion->Complete(res);
      });
    }
  }

  int64_t RunIo(const FileIoRequest& request, IoPath* path) override {
    *path = IoPath::kNone;
    if (int err = Refuse(request); err != 0) return err;
    return Move(request, path);
  }

  int Fsync(File* file, bool datasync) override {
    return ceph_ll_fsync(cmount_, Of(file)->fh, datasync ? 1 : 0);
  }
  int Fallocate(File* file, int mode, off_t offset, off_t length) override {
    return ceph_ll_fallocate(cmount_, Of(file)->fh, mode, offset, length);
  }
  ssize_t CopyFileRange(File*, off_t, File*, off_t, size_t, unsigned) override {
    return -EOPNOTSUPP;  // the kernel copies through read and write
  }
  off_t Lseek(File* file, off_t offset, int whence) override {
    return ceph_ll_lseek(cmount_, Of(file)->fh, offset, whence);
  }
  // Another client may have changed the file: drop the cached pages at
  // every open (docs/ceph.md, coherence).
  bool KeepCache(File*) override { return false; }
  NodeId NodeOf(File* file) override { return Of(file)->node; }

  int OpenDir(NodeId node, Dir** out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    ceph_dir_result* dirp = nullptr;
    int res = ceph_ll_opendir(cmount_, in, &dirp, perms_);
    if (res < 0) return res;
    *out = reinterpret_cast<Dir*>(new CephDir{dirp, node});
    return 0;
  }

  int ReadDir(Dir* dir, off_t offset,
              const std::function<bool(const DirEntry&)>& emit) override {
    CephDir* d = Of(dir);
    ceph_seekdir(cmount_, d->dirp, offset);
    for (;;) {
      struct dirent de = {};
      int res = ceph_readdir_r(cmount_, d->dirp, &de);
      if (res < 0) return res;
      if (res == 0) return 0;
      DirEntry entry{
          de.d_name, static_cast<ino_t>(NodeOfIno(de.d_ino, root_ino_)),
          de.d_type, static_cast<off_t>(ceph_telldir(cmount_, d->dirp))};
      if (!emit(entry)) return 0;
    }
  }

  void ReleaseDir(Dir* dir) override {
    CephDir* d = Of(dir);
    ceph_ll_releasedir(cmount_, d->dirp);
    delete d;
  }

  int FsyncDir(Dir* dir, bool datasync) override {
    Inode* in = Get(Of(dir)->node);
    if (in == nullptr) return -ESTALE;
    return ceph_ll_sync_inode(cmount_, in, datasync ? 1 : 0);
  }

 private:
  struct Node {
    Inode* in;
    uint64_t lookups;
  };

  static int OpenFlags(int flags) {
    // The kernel gives every write its offset (O_APPEND included) and
    // creates through Create; O_DIRECT means nothing to libcephfs's cache
    // here (docs/ceph.md).
    return flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_APPEND | O_DIRECT);
  }

  static void ToStat(const struct ceph_statx& stx, struct stat* out) {
    *out = {};
    out->st_dev = stx.stx_dev;
    out->st_ino = stx.stx_ino;
    out->st_mode = stx.stx_mode;
    out->st_nlink = stx.stx_nlink;
    out->st_uid = stx.stx_uid;
    out->st_gid = stx.stx_gid;
    out->st_rdev = stx.stx_rdev;
    out->st_size = static_cast<off_t>(stx.stx_size);
    out->st_blksize = stx.stx_blksize;
    out->st_blocks = static_cast<blkcnt_t>(stx.stx_blocks);
    out->st_atim = stx.stx_atime;
    out->st_mtim = stx.stx_mtime;
    out->st_ctim = stx.stx_ctime;
  }

  Inode* Get(NodeId node) {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    return it == nodes_.end() ? nullptr : it->second.in;
  }

  // Takes over the reference `in` carries: adds one lookup of its node.
  int Register(Inode* in, const struct ceph_statx& stx, Entry* out) {
    const NodeId node = NodeOfIno(stx.stx_ino, root_ino_);
    bool known = false;
    {
      absl::MutexLock lock(&mu_);
      auto [it, inserted] = nodes_.try_emplace(node, Node{in, 0});
      ++it->second.lookups;
      known = !inserted;
    }
    // The table holds one reference per node.
    if (known) ceph_ll_put(cmount_, in);
    out->node = node;
    ToStat(stx, &out->attr);
    out->attr.st_ino = node;
    return 0;
  }

  int OpenFile(NodeId node, int flags, bool holds_lookup, File** out) {
    Inode* in = Get(node);
    if (in == nullptr) return holds_lookup ? -EPERM : -ESTALE;
    Fh* fh = nullptr;
    int res = ceph_ll_open(cmount_, in, OpenFlags(flags), &fh, perms_);
    if (res < 0) return res;
    *out = Handle(new CephFile{fh, in, node, holds_lookup});
    return 0;
  }

  static IoPath PathOf(FileOp op) {
    return op == FileOp::kRead || op == FileOp::kWrite ? IoPath::kPageCache
                                                       : IoPath::kNone;
  }

  static int Refuse(const FileIoRequest& request) {
    // libcephfs copies with the CPU: device memory is out of its reach.
    if (request.region != nullptr &&
        request.region->kind() == MemoryRegion::Kind::kDevice) {
      return -EINVAL;
    }
    return 0;
  }

  // Clears set-id bits before an unprivileged write, as write(2) would.
  int KillPrivileges(Fh* fh, const FileIoRequest& request) {
    CephFile* f = Of(request.file);
    Inode* in = f->in != nullptr ? f->in : Get(f->node);
    if (in == nullptr) return 0;
    struct ceph_statx stx = {};
    int res = ceph_ll_getattr(cmount_, in, &stx, CEPH_STATX_MODE, 0, perms_);
    if (res < 0) return res;
    mode_t kill = S_ISUID;
    if (stx.stx_mode & S_IXGRP) kill |= S_ISGID;
    if ((stx.stx_mode & kill) == 0) return 0;
    (void)fh;
    stx.stx_mode = static_cast<uint16_t>(stx.stx_mode & ~kill);
    return ceph_ll_setattr(cmount_, in, &stx, CEPH_SETATTR_MODE, perms_);
  }

  // One request, in the calling thread: bytes moved or -errno.
  int64_t Move(const FileIoRequest& request, IoPath* path) {
    Fh* fh = Of(request.file)->fh;
    *path = IoPath::kNone;
    switch (request.op) {
      case FileOp::kFsync:
      case FileOp::kFdatasync:
        return ceph_ll_fsync(cmount_, fh, request.op == FileOp::kFdatasync);
      case FileOp::kRead:
      case FileOp::kWrite:
        break;
    }
    if (request.op == FileOp::kWrite && (request.flags & kIoKillPrivileges)) {
      if (int err = KillPrivileges(fh, request); err < 0) return err;
    }
    *path = IoPath::kPageCache;
    // libcephfs returns int: move at most 1 GiB a call.
    constexpr uint64_t kMaxCall = 1u << 30;
    uint64_t done = 0;
    while (done < request.len) {
      const uint64_t n = std::min(request.len - done, kMaxCall);
      const int64_t off = static_cast<int64_t>(request.offset + done);
      int res = request.op == FileOp::kRead
                    ? ceph_ll_read(cmount_, fh, off, n, request.buf + done)
                    : ceph_ll_write(cmount_, fh, off, n, request.buf + done);
      if (res < 0) return done > 0 ? static_cast<int64_t>(done) : res;
      if (res == 0) break;  // end of file
      done += static_cast<uint64_t>(res);
    }
    return static_cast<int64_t>(done);
  }

  ceph_mount_info* const cmount_;
  UserPerm* const perms_;  // the daemon's (root): owned by cmount_
  const uint64_t root_ino_;
  absl::Mutex mu_;
  // Every node the kernel holds, with one libcephfs reference each.
  absl::flat_hash_map<NodeId, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<IoPool> pool_;  // reset (drained) before the unmount
};

absl::Status CephError(const std::string& what, int res) {
  return absl::UnavailableError(
      absl::StrCat("ceph: ", what, ": ", std::strerror(-res)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateCephBackend(
    const CephOptions& options) {
  if (options.conf.empty()) {
    return absl::InvalidArgumentError("--backend ceph needs --ceph-conf FILE");
  }
  ceph_mount_info* cmount = nullptr;
  int res =
      ceph_create(&cmount, options.id.empty() ? nullptr : options.id.c_str());
  if (res < 0) return CephError("create", res);
  auto fail = [&](const std::string& what, int err) {
    ceph_release(cmount);
    return CephError(what, err);
  };
  if ((res = ceph_conf_read_file(cmount, options.conf.c_str())) < 0) {
    return fail("read " + options.conf, res);
  }
  // libcephfs waits 300 s by default for an unreachable cluster; a
  // client_mount_timeout the conf sets (other than that default) wins.
  char conf_timeout[32] = {};
  unsigned timeout_s = options.mount_timeout_s;
  if (ceph_conf_get(cmount, "client_mount_timeout", conf_timeout,
                    sizeof(conf_timeout)) == 0) {
    double seconds = std::atof(conf_timeout);
    if (seconds > 0 && seconds != 300) {
      timeout_s = static_cast<unsigned>(std::ceil(seconds));
    }
  }
  const std::string timeout = std::to_string(timeout_s);
  if ((res = ceph_conf_set(cmount, "client_mount_timeout", timeout.c_str())) <
      0) {
    return fail("set client_mount_timeout", res);
  }
  // Both wait for the monitors at most timeout_s.
  const std::string within = absl::StrCat(" (cluster of ", options.conf,
                                          ", within ", timeout_s, " s)");
  if ((res = ceph_init(cmount)) < 0) return fail("connect" + within, res);
  if (!options.fs.empty() &&
      (res = ceph_select_filesystem(cmount, options.fs.c_str())) < 0) {
    return fail("select file system " + options.fs, res);
  }
  if ((res = ceph_mount(cmount, options.root.c_str())) < 0) {
    return fail(absl::StrCat("mount ", options.root, within), res);
  }
  Inode* root = nullptr;
  struct ceph_statx stx = {};
  if ((res = ceph_ll_lookup_root(cmount, &root)) < 0 ||
      (res = ceph_ll_getattr(cmount, root, &stx, CEPH_STATX_INO, 0,
                             ceph_mount_perms(cmount))) < 0) {
    ceph_unmount(cmount);
    return fail("root", res);
  }
  return std::unique_ptr<Backend>(
      new CephBackend(cmount, root, stx.stx_ino, options.io_threads));
}

}  // namespace fgds::backend
