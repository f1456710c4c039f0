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
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backend/ceph/ceph_c_shim.h"
#include "backend/ceph/ceph_connect.h"
#include "backend/ceph/guarded_backend.h"
#include "backend/ceph/io_pool.h"
#include "backend/ceph/node_ids.h"
#include "backend/ceph/object_split.h"
#include "backend/remote/agent_pool.h"
#include "backend/remote/inode_name.h"
#include "backend/request_caller.h"
#include "common/mutex.h"

namespace fgds::backend {

// The opaque handles of backend.h, as this backend defines them. They are
// not the local backend's File/Dir (one definition each per program), so
// the handles cross the interface as casts of these.
struct CephFile {
  Fh* fh;
  Inode* in;  // held by the node table while the kernel holds the node
  NodeId node;
  bool holds_lookup;
  uint64_t granule;  // object_split.h: where large I/O is cut (0: never)
  // The kernel may keep the node's cached pages at this open (KeepCache):
  // the file is unchanged since the last open that looked (CacheStamp).
  bool keep_cache = false;
  // What the agents' failed syncs of the file have told this handle
  // (AgentPool::Sync): set at open, where agents serve the file.
  uint64_t agent_errors_told = 0;
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

// The credentials one call runs with: the request's caller where the FUSE
// layer gave one (request_caller.h), so that Ceph checks its permissions
// as for any other client of the cluster; else the daemon's own.
class CallPerm {
 public:
  explicit CallPerm(const UserPerm* daemon) : perm_(daemon) {
    if (const Caller* caller = CurrentRequestCaller(); caller != nullptr) {
      own_.emplace(*caller);
      perm_ = own_->get();
    }
  }
  const UserPerm* get() const { return perm_; }

 private:
  std::optional<CallerPerm> own_;
  const UserPerm* perm_;
};

class CephBackend : public Backend {
 public:
  CephBackend(ceph_mount_info* cmount, Inode* root, uint64_t root_ino,
              unsigned io_threads, std::unique_ptr<remote::AgentPool> agents)
      : cmount_(cmount),
        perms_(ceph_mount_perms(cmount)),
        root_ino_(root_ino),
        agents_(std::move(agents)),
        pool_(std::make_unique<IoPool>(io_threads)) {
    nodes_[kCephRootNode] = Node{root, 1, false, {}};
    // Ceph tells its client when it revokes the capabilities that let it
    // cache a file's data or a name; the client passes that on to the
    // kernel's caches of this mount (SetCacheEvents, docs/remote.md).
    // There is no way to unregister: the callbacks end with the unmount.
    fgds_ceph_register_callbacks(cmount_, this);
  }
  ~CephBackend() override {
    // Jobs still queued run against the mount: drain them before it goes.
    pool_.reset();
    {
      fgds::MutexLock lock(&mu_);
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
  std::string StatsText() const override {
    return absl::StrCat(
        "# ceph: split_requests=",
        split_requests_.load(std::memory_order_relaxed),
        " split_pieces=", split_pieces_.load(std::memory_order_relaxed),
        " inval_data=", inode_invalidations_.load(std::memory_order_relaxed),
        " inval_names=", entry_invalidations_.load(std::memory_order_relaxed),
        " kept_cache_opens=", kept_opens_.load(std::memory_order_relaxed),
        " caps_dropped=", caps_dropped_.load(std::memory_order_relaxed), "\n",
        agents_ != nullptr ? agents_->StatsText() : std::string());
  }
  bool WantsRequestCaller() const override { return true; }
  // libcephfs copies every byte with the CPU: GPU memory only moves by an
  // RDMA agent's NIC (TakesDmabufs), never here.
  bool ReachesDeviceMemory() const override { return false; }
  // With an rdma:// agent, GPU iovs keep their dma-buf, unmapped (the
  // session's NIC-only iovs): their entries go to the agents only, and
  // what no agent moves is answered "bounce this entry" (DeviceByAgent).
  bool TakesDmabufs() const override {
    return agents_ != nullptr && agents_->TakesDmabufs();
  }
  void SetCacheEvents(CacheEvents* events) override {
    fgds::MutexLock lock(&events_mu_);
    events_ = events;
  }

  int Lookup(NodeId parent, const char* name, Entry* out) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    Inode* in = nullptr;
    struct ceph_statx stx = {};
    int res =
        ceph_ll_lookup(cmount_, dir, name, &in, &stx, kWant, 0, perm.get());
    if (res < 0) return res;
    return Register(in, stx, out);
  }

  void Forget(NodeId node, uint64_t count) override {
    if (node == kCephRootNode) return;
    Inode* drop = nullptr;
    {
      fgds::MutexLock lock(&mu_);
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
    out->st_ino = node;
    return 0;
  }

  int SetAttr(NodeId node, const SetAttrRequest& request,
              struct stat* out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    struct ceph_statx stx = {};
    int mask = 0;
    const struct stat& a = request.attr;
    if (request.valid & kSetMode) {
      // The set-id bits of a file its writer does not own are cleared
      // with a SETATTR in the writer's name: the kernel's, or with
      // FUSE_HANDLE_KILLPRIV_V2 KillSetIdBits (fusefs/fuse_features.cc)
      // at the kernel's word. Ceph lets only the owner chmod, so that part
      // runs as the daemon: it is what write(2) and truncate(2) do to any
      // file, owned or not.
      struct ceph_statx now = {};
      int res = ceph_ll_getattr(cmount_, in, &now, CEPH_STATX_MODE, 0, perms_);
      if (res < 0) return res;
      const mode_t setid = S_ISUID | S_ISGID;
      const mode_t want = a.st_mode & 07777;
      if (want != (now.stx_mode & 07777) &&
          want == (now.stx_mode & 07777 & ~setid)) {
        struct ceph_statx kill = {};
        kill.stx_mode = static_cast<uint16_t>(a.st_mode);
        res = ceph_ll_setattr(cmount_, in, &kill, CEPH_SETATTR_MODE, perms_);
        if (res < 0) return res;
      } else {
        mask |= CEPH_SETATTR_MODE;
        stx.stx_mode = static_cast<uint16_t>(a.st_mode);
      }
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
    // Times run as the daemon. The kernel already applied POSIX's rules to
    // them (default_permissions: explicit times only for the owner, "now"
    // for anyone who may write), but a "now" reaches Ceph as explicit times
    // (above) and the kernel's writeback cache sends the times it kept as
    // explicit ones too, which Ceph lets only the owner set: a writer that
    // does not own the file got EPERM from utimensat(NULL), truncate and
    // close (posix_semantics_test over ceph: OtherUserDenied, StickyDir).
    const int times =
        mask & (CEPH_SETATTR_ATIME | CEPH_SETATTR_MTIME | CEPH_SETATTR_CTIME);
    if ((mask & ~times) != 0) {
      int res = ceph_ll_setattr(cmount_, in, &stx, mask & ~times, perm.get());
      if (res < 0) return res;
    }
    if (times != 0) {
      int res = ceph_ll_setattr(cmount_, in, &stx, times, perms_);
      if (res < 0) return res;
    }
    if (int res = GetAttr(node, out); res < 0) return res;
    // truncate(2) and chown(2) of a regular file drop its file
    // capabilities (DropCapability), after the change: a change Ceph
    // refused drops nothing.
    if (S_ISREG(out->st_mode) &&
        (request.valid & (kSetSize | kSetUid | kSetGid)) != 0) {
      int res = DropCapability(in);
      if (res < 0) return res;
      if (res > 0) return GetAttr(node, out);  // its ctime moved
    }
    return 0;
  }

  int ReadLink(NodeId node, std::string* target) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    char buf[PATH_MAX];
    int res = ceph_ll_readlink(cmount_, in, buf, sizeof(buf), perm.get());
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
    CallPerm perm(perms_);
    int res = ceph_ll_link(cmount_, in, dir, new_name, perm.get());
    if (res < 0) return res;
    return Lookup(new_parent, new_name, out);
  }

  int Unlink(NodeId parent, const char* name) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    return ceph_ll_unlink(cmount_, dir, name, perm.get());
  }

  int RmDir(NodeId parent, const char* name) override {
    Inode* dir = Get(parent);
    if (dir == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    return ceph_ll_rmdir(cmount_, dir, name, perm.get());
  }

  int Rename(NodeId parent, const char* name, NodeId new_parent,
             const char* new_name, unsigned flags) override {
    // libcephfs 16 has no RENAME_NOREPLACE or RENAME_EXCHANGE, and the MDS
    // none to offer atomically; EINVAL is renameat2's answer for "this
    // file system does not support the flag" (a look-then-rename would
    // race with every other client of the cluster).
    if (flags != 0) return -EINVAL;
    Inode* from = Get(parent);
    Inode* to = Get(new_parent);
    if (from == nullptr || to == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    return ceph_ll_rename(cmount_, from, name, to, new_name, perm.get());
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
    CallPerm perm(perms_);
    return ceph_ll_setxattr(cmount_, in, name, value, size, flags, perm.get());
  }
  int GetXattr(NodeId node, const char* name, void* value,
               size_t size) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    int res = ceph_ll_getxattr(cmount_, in, name, value, size, perm.get());
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
    CallPerm perm(perms_);
    size_t used = 0;
    int res = ceph_ll_listxattr(cmount_, in, list, size, &used, perm.get());
    return res < 0 ? res : static_cast<int>(used);
  }
  int RemoveXattr(NodeId node, const char* name) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    // A file's capabilities go as the daemon. The kernel removes them
    // itself when it drops privileges on a chown, in the chowner's name,
    // and Ceph lets only a writer of the file remove a security.* xattr
    // (the owner's chgrp of a 0555 file failed: EACCES); a process gets
    // this far only with CAP_SETFCAP (cap_inode_removexattr).
    const bool capability = std::strcmp(name, "security.capability") == 0;
    return ceph_ll_removexattr(cmount_, in, name,
                               capability ? perms_ : perm.get());
  }

  int Open(NodeId node, int flags, File** out) override {
    CallPerm perm(perms_);
    int res = OpenFile(node, flags, false, perm.get(), out);
    if (res == 0) Of(*out)->keep_cache = UnchangedSinceLastOpen(*out, flags);
    return res;
  }

  int OpenNode(NodeId node, int flags, File** out) override {
    {
      fgds::MutexLock lock(&mu_);
      auto it = nodes_.find(node);
      if (it == nodes_.end()) return -EPERM;
      ++it->second.lookups;  // the handle's own, given back by Release
    }
    // As the daemon: the client proved its access with its descriptor.
    int res = OpenFile(node, flags, true, perms_, out);
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
    Inode* held = Get(entry->node);
    // Without O_EXCL the file may be another client's, made since the
    // kernel looked, and O_TRUNC truncated it: as an O_TRUNC open.
    if ((flags & O_TRUNC) != 0 && held != nullptr) {
      if (int err = DropCapability(held); err < 0) {
        ceph_ll_close(cmount_, fh);
        Forget(entry->node, 1);
        return err;
      }
    }
    *out = NewFile(new CephFile{fh, held, entry->node, false, GranuleOf(held)});
    return 0;
  }

  // Close-to-open: a close syncs the file's writes that agents
  // acknowledged, and reports their loss (AgentPool::Sync).
  int Flush(File* file) override { return SyncAgents(file, false); }

  void Release(File* file) override {
    CephFile* f = Of(file);
    if (agents_ != nullptr) agents_->FileClosed(AgentName(f->node));
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
      std::vector<Piece> pieces = PiecesOf(request);
      if (pieces.size() <= 1) {
        pool_->Submit([this, request] {
          IoPath path;
          int64_t res = MoveWhole(request, &path);
          CountBounce(path);
          request.completion->set_path(path);
          request.completion->Complete(res);
        });
        continue;
      }
      // Each object's piece on its own pool thread; the last to finish
      // completes the request.
      // The last piece to finish deletes `split`, maybe before this loop
      // ends: count from a copy.
      const size_t n = pieces.size();
      auto* split = new Split(request, std::move(pieces));
      auto piece = [this, split](size_t i) {
        IoPath path;
        split->results[i] = MovePiece(split->request, split->pieces[i], &path);
        if (path == IoPath::kBounceAlways) {
          // Any piece that bounces bounces the request; "always" wins.
          split->bounce.store(2, std::memory_order_relaxed);
        } else if (path == IoPath::kBounceEntry) {
          int none = 0;
          split->bounce.compare_exchange_strong(none, 1,
                                                std::memory_order_relaxed);
        }
        if (!ByAgent(path)) {
          split->all_by_agent.store(false, std::memory_order_relaxed);
        }
        if (path != IoPath::kAgentRdma) {
          split->all_rdma.store(false, std::memory_order_relaxed);
        }
        if (split->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          int64_t res = CombinePieces(split->pieces, split->results);
          FileIoCompletion* completion = split->request.completion;
          if (split->all_by_agent.load(std::memory_order_relaxed)) {
            completion->set_path(split->all_rdma.load(std::memory_order_relaxed)
                                     ? IoPath::kAgentRdma
                                     : IoPath::kAgentTcp);
          }
          if (const int b = split->bounce.load(std::memory_order_relaxed)) {
            res = -EREMOTEIO;
            completion->set_path(b == 2 ? IoPath::kBounceAlways
                                        : IoPath::kBounceEntry);
            CountBounce(completion->path());
          }
          delete split;
          completion->Complete(res);
        }
      };
      if (request.op != FileOp::kWrite) {
        for (size_t i = 0; i < n; ++i) pool_->Submit([piece, i] { piece(i); });
        continue;
      }
      // A write first drops what write(2) drops (BeforeWrite), in one job
      // that then starts the pieces: no byte lands before.
      pool_->Submit([this, split, n, piece] {
        if (int err = BeforeWrite(split->request); err < 0) {
          FileIoCompletion* completion = split->request.completion;
          delete split;
          completion->set_path(IoPath::kNone);
          completion->Complete(err);
          return;
        }
        for (size_t i = 1; i < n; ++i) pool_->Submit([piece, i] { piece(i); });
        piece(0);
      });
    }
  }

  int64_t RunIo(const FileIoRequest& request, IoPath* path) override {
    *path = IoPath::kNone;
    if (int err = Refuse(request); err != 0) return err;
    std::vector<Piece> pieces = PiecesOf(request);
    if (pieces.size() <= 1) {
      const int64_t res = MoveWhole(request, path);
      CountBounce(*path);
      return res;
    }
    // A write's pieces start once what write(2) drops is gone.
    if (request.op == FileOp::kWrite) {
      if (int err = BeforeWrite(request); err < 0) return err;
    }
    // The first piece here, the others on the pool, then wait for them.
    std::vector<int64_t> results(pieces.size(), 0);
    fgds::Mutex mu;
    fgds::CondVar done;
    size_t left = pieces.size() - 1;
    bool all_by_agent = true;
    bool all_rdma = true;
    IoPath bounce = IoPath::kNone;  // device memory: a piece bounced
    auto note_bounce = [&bounce](IoPath p) {
      if (IsBounce(p) && bounce != IoPath::kBounceAlways) bounce = p;
    };
    for (size_t i = 1; i < pieces.size(); ++i) {
      pool_->Submit([&, i] {
        IoPath piece_path;
        int64_t res = MovePiece(request, pieces[i], &piece_path);
        fgds::MutexLock lock(&mu);
        note_bounce(piece_path);
        results[i] = res;
        if (!ByAgent(piece_path)) all_by_agent = false;
        if (piece_path != IoPath::kAgentRdma) all_rdma = false;
        if (--left == 0) done.Signal();
      });
    }
    IoPath first_path;
    results[0] = MovePiece(request, pieces[0], &first_path);
    fgds::MutexLock lock(&mu);
    while (left != 0) done.Wait(&mu);
    note_bounce(first_path);
    if (bounce != IoPath::kNone) {
      *path = bounce;
      CountBounce(bounce);
      return -EREMOTEIO;
    }
    if (!all_by_agent || !ByAgent(first_path)) {
      *path = IoPath::kPageCache;
    } else {
      *path = all_rdma && first_path == IoPath::kAgentRdma ? IoPath::kAgentRdma
                                                           : IoPath::kAgentTcp;
    }
    return CombinePieces(pieces, results);
  }

  int Fsync(File* file, bool datasync) override {
    const int agents = SyncAgents(file, true);
    const int own = ceph_ll_fsync(cmount_, Of(file)->fh, datasync ? 1 : 0);
    return agents < 0 ? agents : own;
  }
  int Fallocate(File* file, int mode, off_t offset, off_t length) override {
    int res = ceph_ll_fallocate(cmount_, Of(file)->fh, mode, offset, length);
    // As a local file system's fallocate (file_modified): the file's
    // capabilities go with the change.
    if (res == 0) res = std::min(DropCapability(Of(file)->in), 0);
    return res;
  }
  ssize_t CopyFileRange(File*, off_t, File*, off_t, size_t, unsigned) override {
    return -EOPNOTSUPP;  // the kernel copies through read and write
  }
  off_t Lseek(File* file, off_t offset, int whence) override {
    return ceph_ll_lseek(cmount_, Of(file)->fh, offset, whence);
  }
  // Close-to-open (docs/remote.md): the kernel keeps the file's cached
  // pages at an open only where the file is unchanged since the last open
  // (UnchangedSinceLastOpen); within an open, Ceph's revocations reach the
  // kernel through the callbacks.
  bool KeepCache(File* file) override { return Of(file)->keep_cache; }
  NodeId NodeOf(File* file) override { return Of(file)->node; }

  int OpenDir(NodeId node, Dir** out) override {
    Inode* in = Get(node);
    if (in == nullptr) return -ESTALE;
    CallPerm perm(perms_);
    ceph_dir_result* dirp = nullptr;
    int res = ceph_ll_opendir(cmount_, in, &dirp, perm.get());
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
  // What an open saw of a file (UnchangedSinceLastOpen): Ceph's change
  // attribute (bumped by every write and attribute change of any client),
  // with times and size for good measure.
  struct CacheStamp {
    uint64_t version = 0;
    struct timespec mtime = {};
    struct timespec ctime = {};
    uint64_t size = 0;
    bool operator==(const CacheStamp& o) const {
      return version == o.version && mtime.tv_sec == o.mtime.tv_sec &&
             mtime.tv_nsec == o.mtime.tv_nsec &&
             ctime.tv_sec == o.ctime.tv_sec &&
             ctime.tv_nsec == o.ctime.tv_nsec && size == o.size;
    }
  };
  struct Node {
    Inode* in;
    uint64_t lookups;
    // The stamp the last open of the node took (known false: none since
    // the kernel may have cached pages that no stamp covers).
    bool stamp_known = false;
    CacheStamp stamp;
  };

  // A request cut at its objects (SubmitIo): its pieces' results, and how
  // many pieces are still running.
  struct Split {
    Split(const FileIoRequest& r, std::vector<Piece> p)
        : request(r),
          pieces(std::move(p)),
          results(pieces.size(), 0),
          left(pieces.size()) {}
    const FileIoRequest request;
    const std::vector<Piece> pieces;
    std::vector<int64_t> results;  // slot i written only by piece i's job
    std::atomic<size_t> left;
    std::atomic<bool> all_by_agent{true};  // every piece went to an agent
    std::atomic<bool> all_rdma{true};      // every piece went by RDMA
    // Device memory: a piece bounced (1: kBounceEntry, 2: kBounceAlways).
    // Pieces store it; the last one reads it after its acq_rel on `left`.
    std::atomic<int> bounce{0};
  };

 public:
  // Called from ceph_c_shim.c's callbacks, on libcephfs's invalidator
  // thread, after Ceph revoked this client's
  // right to cache the file's data (another client writes it) or it was
  // truncated: the kernel's pages and attributes of the node go too, or
  // readers of this mount would keep the old bytes.
  void InodeInvalidated(uint64_t ino, int64_t offset, int64_t len) {
    const NodeId node = NodeOfIno(ino, root_ino_);
    {
      fgds::MutexLock lock(&mu_);
      auto it = nodes_.find(node);
      if (it == nodes_.end()) return;  // the kernel caches nothing of it
      // The next open keeps no pages, whatever it sees (belt and braces:
      // the change that made Ceph revoke changes the stamp too).
      it->second.stamp_known = false;
    }
    fgds::MutexLock lock(&events_mu_);
    if (events_ == nullptr) return;
    inode_invalidations_.fetch_add(1, std::memory_order_relaxed);
    events_->InvalidateNode(node, offset, len);
  }

  // A name this client may no longer trust (another client unlinked or
  // renamed it): the kernel looks it up again.
  void DentryInvalidated(uint64_t dir_ino, const char* name, size_t len) {
    const NodeId parent = NodeOfIno(dir_ino, root_ino_);
    if (!Known(parent)) return;
    fgds::MutexLock lock(&events_mu_);
    if (events_ == nullptr) return;
    entry_invalidations_.fetch_add(1, std::memory_order_relaxed);
    events_->InvalidateEntry(parent, std::string_view(name, len));
  }

 private:
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
    fgds::ReaderMutexLock lock(&mu_);
    auto it = nodes_.find(node);
    return it == nodes_.end() ? nullptr : it->second.in;
  }
  bool Known(NodeId node) { return Get(node) != nullptr; }

  // Takes over the reference `in` carries: adds one lookup of its node.
  int Register(Inode* in, const struct ceph_statx& stx, Entry* out) {
    const NodeId node = NodeOfIno(stx.stx_ino, root_ino_);
    bool known = false;
    {
      fgds::MutexLock lock(&mu_);
      auto [it, inserted] = nodes_.try_emplace(node, Node{in, 0, false, {}});
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

  // Where large I/O of the file is cut: its layout's objects.
  uint64_t GranuleOf(Inode* in) {
    if (in == nullptr) return 0;
    uint32_t stripe_unit = 0, stripe_count = 0, object_size = 0;
    fgds_ceph_file_layout(cmount_, in, &stripe_unit, &stripe_count,
                          &object_size);
    return SplitGranule(stripe_unit, stripe_count, object_size);
  }

  int OpenFile(NodeId node, int flags, bool holds_lookup, const UserPerm* perm,
               File** out) {
    Inode* in = Get(node);
    if (in == nullptr) return holds_lookup ? -EPERM : -ESTALE;
    Fh* fh = nullptr;
    int res = ceph_ll_open(cmount_, in, OpenFlags(flags), &fh, perm);
    if (res < 0) return res;
    // An O_TRUNC open truncates: the file's capabilities go, as with
    // truncate(2).
    if ((flags & O_TRUNC) != 0) {
      if (int err = DropCapability(in); err < 0) {
        ceph_ll_close(cmount_, fh);
        return err;
      }
    }
    *out = NewFile(new CephFile{fh, in, node, holds_lookup, GranuleOf(in)});
    return 0;
  }

  // Whether the kernel may keep the pages it cached of `file`'s node
  // before this open: the file's stamp now equals the one the node's last
  // open took (and every open takes one), so no client changed the file in
  // between. Pages cached since that open are then as current as the
  // stamp: a change by anyone bumps Ceph's change attribute. The stamp is
  // coherent when read: libcephfs answers from its cache only while it
  // holds the shared caps that Ceph revokes before any other client may
  // change those fields; else it asks the MDS, which first recalls other
  // clients' write caps (they flush their data and attributes). A
  // write-only open keeps nothing and takes no stamp (its opener reads
  // nothing, and asking the MDS while another client reads the file would
  // pull both clients out of their caching modes for nothing).
  bool UnchangedSinceLastOpen(File* file, int flags) {
    CephFile* f = Of(file);
    const bool stamps = (flags & O_ACCMODE) != O_WRONLY;
    struct ceph_statx stx = {};
    const bool got =
        stamps && ceph_ll_getattr(cmount_, f->in, &stx,
                                  CEPH_STATX_VERSION | CEPH_STATX_MTIME |
                                      CEPH_STATX_CTIME | CEPH_STATX_SIZE,
                                  0, perms_) == 0;
    CacheStamp now;
    now.version = stx.stx_version;
    now.mtime = stx.stx_mtime;
    now.ctime = stx.stx_ctime;
    now.size = stx.stx_size;
    fgds::MutexLock lock(&mu_);
    auto it = nodes_.find(f->node);
    if (it == nodes_.end()) return false;
    Node& node = it->second;
    const bool same = got && node.stamp_known && node.stamp == now;
    node.stamp_known = got;
    node.stamp = now;
    if (same) kept_opens_.fetch_add(1, std::memory_order_relaxed);
    return same;
  }

  static bool ByAgent(IoPath path) {
    return path == IoPath::kAgentTcp || path == IoPath::kAgentRdma;
  }

  static IoPath PathOf(FileOp op) {
    return op == FileOp::kRead || op == FileOp::kWrite ? IoPath::kPageCache
                                                       : IoPath::kNone;
  }

  static bool Device(const FileIoRequest& request) {
    return request.region != nullptr &&
           request.region->kind() == MemoryRegion::Kind::kDevice;
  }

  int Refuse(const FileIoRequest& request) const {
    // libcephfs copies with the CPU: device memory is out of its reach.
    // Only its dma-buf, for an agent's NIC, gives it a way (DeviceByAgent).
    if (Device(request) &&
        (agents_ == nullptr || request.region->dmabuf_fd() < 0 ||
         (request.op != FileOp::kRead && request.op != FileOp::kWrite))) {
      return -EINVAL;
    }
    return 0;
  }

  // The object pieces of a read or write (one piece: not split). The
  // callers run a write's BeforeWrite before any of its pieces starts.
  std::vector<Piece> PiecesOf(const FileIoRequest& request) {
    if (request.op != FileOp::kRead && request.op != FileOp::kWrite) return {};
    std::vector<Piece> pieces =
        SplitAtObjects(request.offset, request.len, Of(request.file)->granule);
    if (pieces.size() > 1) {
      split_requests_.fetch_add(1, std::memory_order_relaxed);
      split_pieces_.fetch_add(pieces.size(), std::memory_order_relaxed);
    }
    return pieces;
  }

  // What write(2) drops before the bytes land (file_remove_privs), here
  // because no kernel does it for us reliably: the file's capabilities
  // (security.capability), whoever writes, and for an unprivileged writer
  // (kIoKillPrivileges) its set-id bits. The kernel checks the capability
  // only while the inode is not S_NOSEC, which FUSE_HANDLE_KILLPRIV_V2
  // makes it after the first write until its attributes refresh, and
  // another client may set one meanwhile; usrbio writes never pass the
  // kernel. 0 or -errno (the write then fails, with nothing written).
  int BeforeWrite(const FileIoRequest& request) {
    CephFile* f = Of(request.file);
    Inode* in = f->in != nullptr ? f->in : Get(f->node);
    if (in == nullptr) return 0;
    if (int res = DropCapability(in); res < 0) return res;
    if ((request.flags & kIoKillPrivileges) == 0) return 0;
    struct ceph_statx stx = {};
    int res = ceph_ll_getattr(cmount_, in, &stx, CEPH_STATX_MODE, 0, perms_);
    if (res < 0) return res;
    mode_t kill = S_ISUID;
    if (stx.stx_mode & S_IXGRP) kill |= S_ISGID;
    if ((stx.stx_mode & kill) == 0) return 0;
    stx.stx_mode = static_cast<uint16_t>(stx.stx_mode & ~kill);
    return ceph_ll_setattr(cmount_, in, &stx, CEPH_SETATTR_MODE, perms_);
  }

  // Removes the file's capabilities (the security.capability xattr), as
  // Linux does on a write, truncate or chown of a regular file by anyone
  // (cap_inode_need_killpriv looks only at the xattr). As the daemon: Ceph
  // lets only writers of the file remove a security.* xattr, and dropping
  // one only takes privilege away. 1: removed, 0: there was none, or
  // -errno.
  //
  // Asked on every call, not remembered per file: libcephfs answers from
  // its cache while this client holds the inode's shared xattr cap, which
  // Ceph revokes before any client sets an xattr, so the answer is as
  // current as Ceph's; nothing tells this client when another one sets
  // the xattr, so a remembered "none" would go stale unseen. Measured
  // here: 6 to 15 us per cached ask, one MDS request for the first.
  int DropCapability(Inode* in) {
    static constexpr char kName[] = "security.capability";
    if (in == nullptr) return 0;
    int res = ceph_ll_getxattr(cmount_, in, kName, nullptr, 0, perms_);
    if (res == -ENODATA) return 0;
    if (res < 0) return res;
    res = ceph_ll_removexattr(cmount_, in, kName, perms_);
    if (res == -ENODATA) return 0;  // another client removed it first
    if (res < 0) return res;
    caps_dropped_.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }

  // One piece of a read or write, in the calling thread: bytes moved
  // (short only at end of file) or -errno, and the way they went. With
  // agents, the piece (within one object) goes to one of them first
  // (MoveByAgent); what no agent moved goes through libcephfs.
  int64_t MovePiece(const FileIoRequest& request, const Piece& piece,
                    IoPath* path) {
    if (Device(request)) return DeviceByAgent(request, piece, path);
    *path = IoPath::kPageCache;
    Piece rest = piece;
    if (agents_ != nullptr) {
      IoPath agent_path = IoPath::kAgentTcp;
      const int64_t n = MoveByAgent(request, piece, &agent_path);
      if (n >= 0 && (static_cast<uint64_t>(n) == piece.len ||
                     request.op == FileOp::kRead)) {
        *path = agent_path;
        return n;
      }
      // A write the agent took only part of: the rest here.
      if (n > 0) {
        rest.offset += static_cast<uint64_t>(n);
        rest.len -= static_cast<uint64_t>(n);
      }
    }
    const int64_t n = MoveByCeph(request, rest);
    if (rest.offset == piece.offset || n < 0) return n;
    return static_cast<int64_t>(rest.offset - piece.offset) + n;
  }

  // MovePiece of GPU memory (a NIC-only GPU iov with its dma-buf): only an
  // RDMA agent moves it, in place. Whatever stops that (no agent up, a TCP
  // agent, a NIC that refuses the dma-buf, checked payloads, a failure or
  // a short write on the way) answers -EREMOTEIO with path kBounceEntry,
  // or kBounceAlways when no later request on the region can move either:
  // the client stages the entry itself. A read's partial bytes may have
  // landed, but the answer is no success, so no caller uses them; a write
  // may have reached the file in part, and the client's redo writes the
  // same bytes at the same offsets.
  int64_t DeviceByAgent(const FileIoRequest& request, const Piece& piece,
                        IoPath* path) {
    if (!agents_->DeviceNeverMoves(*request.region)) {
      IoPath agent_path = IoPath::kAgentRdma;
      const int64_t n = MoveByAgent(request, piece, &agent_path);
      if (n >= 0 && (static_cast<uint64_t>(n) == piece.len ||
                     request.op == FileOp::kRead)) {
        *path = agent_path;
        return n;
      }
    } else {
      agents_->NoteGpuFallback(
          "GPU iov: no agent can move it (checked payloads, or its NIC "
          "registration failed)");
    }
    *path = agents_->DeviceNeverMoves(*request.region) ? IoPath::kBounceAlways
                                                       : IoPath::kBounceEntry;
    return -EREMOTEIO;
  }
  // Counts a request answered "bounce this entry" (once per request, not
  // per piece) in the agents' stats.
  void CountBounce(IoPath path) {
    if (IsBounce(path)) agents_->NoteGpuBounce(path == IoPath::kBounceAlways);
  }

  // The agent's part of MovePiece: bytes moved or -errno (then the caller
  // moves the piece itself; the fallback is counted here), and the path
  // the agent's transport is (tcp, rdma).
  int64_t MoveByAgent(const FileIoRequest& request, const Piece& piece,
                      IoPath* path) {
    CephFile* f = Of(request.file);
    const uint64_t ino = InoOfNode(f->node, root_ino_);
    // Which agent: the one on the host of the object's primary OSD is the
    // design (AgentPool::Choose matches addresses), but Pacific's
    // libcephfs has no working call from an Inode to that OSD:
    // ceph_ll_get_stripe_osd drops the caller's layout and computes with
    // an empty one (it fails an assertion in OSDMap, killing the daemon:
    // seen here), and ceph_get_file_extent_osds wants a descriptor of the
    // path API, which this backend does not have. So the objects of a file
    // are spread over the agents that are up, by object number: every
    // agent carries a share, and one object always goes to one agent.
    const uint64_t object = f->granule != 0 ? piece.offset / f->granule : 0;
    const int agent = agents_->Choose(nullptr, ino * 31 + object);
    if (agent < 0) {
      agents_->Fallback(-1, request.region);
      return -EHOSTDOWN;
    }
    // The agent opens the file by its inode number (CephStore): valid on
    // any client of the file system, and unchanged by renames.
    const std::string name = AgentName(f->node);
    *path = agents_->PathOf(agent);
    char* buf = request.buf + (piece.offset - request.offset);
    const int64_t n = request.op == FileOp::kRead
                          ? agents_->Read(agent, name, piece.offset, buf,
                                          piece.len, request.region)
                          : agents_->Write(agent, name, piece.offset, buf,
                                           piece.len, request.region);
    if (n < 0 || (request.op == FileOp::kWrite &&
                  static_cast<uint64_t>(n) < piece.len)) {
      agents_->Fallback(agent);
    }
    return n;
  }

  // The agents took writes of the file that they acknowledged before
  // syncing them: the file's fsync, fdatasync and close sync them there
  // (the daemon's own client never saw those bytes). 0 or -errno, also
  // for an earlier failed sync the handle was not told of (`fsync` tells
  // it; a close does not: unsynced_writes.h).
  int SyncAgents(File* file, bool fsync) {
    if (agents_ == nullptr) return 0;
    CephFile* f = Of(file);
    return agents_->Sync(AgentName(f->node), &f->agent_errors_told, fsync);
  }
  // The name agents know the node's file by.
  std::string AgentName(NodeId node) const {
    return absl::StrCat(remote::kInodeNamePrefix, InoOfNode(node, root_ino_));
  }
  // A new handle of `node`'s file.
  File* NewFile(CephFile* f) {
    if (agents_ != nullptr)
      f->agent_errors_told = agents_->FileOpened(AgentName(f->node));
    return Handle(f);
  }

  // libcephfs's part of MovePiece.
  int64_t MoveByCeph(const FileIoRequest& request, const Piece& piece) {
    Fh* fh = Of(request.file)->fh;
    char* buf = request.buf + (piece.offset - request.offset);
    // libcephfs returns int: move at most 1 GiB a call.
    constexpr uint64_t kMaxCall = 1u << 30;
    uint64_t done = 0;
    while (done < piece.len) {
      const uint64_t n = std::min(piece.len - done, kMaxCall);
      const int64_t off = static_cast<int64_t>(piece.offset + done);
      int res = request.op == FileOp::kRead
                    ? ceph_ll_read(cmount_, fh, off, n, buf + done)
                    : ceph_ll_write(cmount_, fh, off, n, buf + done);
      if (res < 0) return done > 0 ? static_cast<int64_t>(done) : res;
      if (res == 0) break;  // end of file
      done += static_cast<uint64_t>(res);
    }
    return static_cast<int64_t>(done);
  }

  // One request, in the calling thread: bytes moved or -errno.
  int64_t Move(const FileIoRequest& request, IoPath* path) {
    *path = IoPath::kNone;
    switch (request.op) {
      case FileOp::kFsync:
      case FileOp::kFdatasync: {
        const int agents = SyncAgents(request.file, true);
        const int own = ceph_ll_fsync(cmount_, Of(request.file)->fh,
                                      request.op == FileOp::kFdatasync);
        return agents < 0 ? agents : own;
      }
      case FileOp::kRead:
      case FileOp::kWrite:
        break;
    }
    return MovePiece(request, Piece{request.offset, request.len}, path);
  }
  // Move, after a write's BeforeWrite.
  int64_t MoveWhole(const FileIoRequest& request, IoPath* path) {
    *path = IoPath::kNone;
    if (request.op == FileOp::kWrite) {
      if (int err = BeforeWrite(request); err < 0) return err;
    }
    return Move(request, path);
  }

  ceph_mount_info* const cmount_;
  UserPerm* const perms_;  // the daemon's (root): owned by cmount_
  const uint64_t root_ino_;
  // The storage-side agents (null: none): file data goes to them first.
  const std::unique_ptr<remote::AgentPool> agents_;
  // fgds::Mutex, not absl::Mutex: Debian's abseil is not built for TSan.
  fgds::Mutex mu_;
  // Every node the kernel holds, with one libcephfs reference each.
  absl::flat_hash_map<NodeId, Node> nodes_ ABSL_GUARDED_BY(mu_);
  // Held while an event is delivered, so that SetCacheEvents(nullptr)
  // returns only when none is under way. Never held with mu_.
  fgds::Mutex events_mu_;
  CacheEvents* events_ ABSL_GUARDED_BY(events_mu_) = nullptr;
  // For /.fgds/stats (StatsText); invalidations as passed to the mount.
  std::atomic<uint64_t> split_requests_{0};
  std::atomic<uint64_t> split_pieces_{0};
  std::atomic<uint64_t> inode_invalidations_{0};
  std::atomic<uint64_t> entry_invalidations_{0};
  std::atomic<uint64_t> kept_opens_{0};    // opens that kept the kernel's pages
  std::atomic<uint64_t> caps_dropped_{0};  // security.capability removals
  std::unique_ptr<IoPool> pool_;           // reset (drained) before the unmount
};

}  // namespace

// ceph_c_shim.h: `handle` is the CephBackend that registered.
extern "C" void fgds_ceph_inode_invalidated(void* handle, uint64_t ino,
                                            int64_t offset, int64_t len) {
  static_cast<CephBackend*>(handle)->InodeInvalidated(ino, offset, len);
}
extern "C" void fgds_ceph_dentry_invalidated(void* handle, uint64_t dir_ino,
                                             const char* name, size_t len) {
  static_cast<CephBackend*>(handle)->DentryInvalidated(dir_ino, name, len);
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCephBackend(
    const CephOptions& options) {
  if (options.conf.empty()) {
    return absl::InvalidArgumentError("--backend ceph needs --ceph-conf FILE");
  }
  // The agents first: a bad key file fails the mount before it connects.
  std::unique_ptr<remote::AgentPool> agents;
  if (!options.agents.empty()) {
    remote::AgentPoolOptions pool_options;
    pool_options.agents = options.agents;
    pool_options.checked = options.agent_crc;
    // Fsync, usrbio fsync and Flush call SyncAgents.
    pool_options.deferred_sync = true;
    auto key = remote::LoadAgentKey(options.agent_key);
    if (!key.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--agent-key: ", key.status().message()));
    }
    pool_options.key = *std::move(key);
    pool_options.max_idle = options.io_threads;
    auto pool = remote::AgentPool::Create(std::move(pool_options));
    if (!pool.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--agents: ", pool.status().message()));
    }
    agents = *std::move(pool);
  }
  auto connected = ConnectCeph(options);
  if (!connected.ok()) return connected.status();
  ceph_mount_info* cmount = *connected;
  int res;
  auto fail = [&](const std::string& what, int err) {
    ceph_release(cmount);
    return CephError(what, err);
  };
  Inode* root = nullptr;
  struct ceph_statx stx = {};
  if ((res = ceph_ll_lookup_root(cmount, &root)) < 0 ||
      (res = ceph_ll_getattr(cmount, root, &stx, CEPH_STATX_INO, 0,
                             ceph_mount_perms(cmount))) < 0) {
    ceph_unmount(cmount);
    return fail("root", res);
  }
  std::unique_ptr<Backend> backend(new CephBackend(
      cmount, root, stx.stx_ino, options.io_threads, std::move(agents)));
  if (options.call_timeout_ms == 0) return backend;
  return GuardBackend(std::move(backend), options.gate_threads,
                      std::chrono::milliseconds(options.call_timeout_ms),
                      options.here_reads);
}

}  // namespace fgds::backend
