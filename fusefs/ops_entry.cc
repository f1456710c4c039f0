// FUSE handlers for names and attributes: lookup, forget, getattr, setattr,
// readlink, mknod, mkdir, symlink, link, unlink, rmdir, rename, statfs.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "fusefs/caller_groups.h"
#include "fusefs/control_dir.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {

backend::Caller CallerOf(fuse_req_t req, bool with_groups) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  backend::Caller caller;
  caller.uid = ctx->uid;
  caller.gid = ctx->gid;
  caller.pid = ctx->pid;
  // Set by libfuse for mknod, mkdir and create (0 otherwise); the kernel
  // leaves it to us (FUSE_CAP_DONT_MASK) when it enforces ACLs.
  caller.umask = ctx->umask;
  // Root's groups decide nothing: the local backend acts with fsuid 0,
  // which keeps the daemon's capabilities (no permission or set-id check
  // consults groups then), libcephfs lets uid 0 pass its permission checks,
  // and the remote agent acts as root the same way.
  if (with_groups && ctx->uid != 0) {
    // Not fuse_req_getgroups: it reads /proc twice per call
    // (caller_groups.h). An error (the caller is gone, or in a pid
    // namespace the daemon cannot see) leaves its primary group only,
    // which can only deny more, never grant more.
    ThreadGroups(ctx->pid, &caller.groups);
  }
  return caller;
}

void FillEntry(const Filesystem& fs, const backend::Entry& entry,
               fuse_entry_param* e) {
  std::memset(e, 0, sizeof(*e));
  e->ino = entry.node;
  e->attr = entry.attr;
  e->attr_timeout = fs.options.attr_timeout;
  e->entry_timeout = fs.options.entry_timeout;
}

namespace {

void ReplyEntryOrErr(fuse_req_t req, Filesystem& fs, int res,
                     const backend::Entry& entry, OpTimer& timer) {
  timer.set_result(res);
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_entry_param e;
  FillEntry(fs, entry, &e);
  if (fuse_reply_entry(req, &e) != 0) {
    // The request was interrupted: the kernel will not count this lookup.
    fs.backend->Forget(entry.node, 1);
  }
}

void ReplyControlEntry(fuse_req_t req, const Filesystem& fs, uint64_t node) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof(e));
  e.ino = node;
  e.attr = fs.control.Attr(node);
  e.attr_timeout = fs.options.attr_timeout;
  e.entry_timeout = fs.options.entry_timeout;
  fuse_reply_entry(req, &e);
}

void DoLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kLookup);
  if (uint64_t node = fs.control.Lookup(parent, name); node != 0) {
    ReplyControlEntry(req, fs, node);
    return;
  }
  if (IsControlNode(parent)) {
    timer.set_result(-ENOENT);
    fuse_reply_err(req, ENOENT);
    return;
  }
  backend::Entry entry;
  int res = fs.backend->Lookup(parent, name, &entry);
  if (res == -ENOENT && fs.options.negative_timeout > 0) {
    // Node 0 is the kernel's "no such name, and remember that": the next
    // lookup of it (every create of a new name starts with one, and so do
    // searches along PATH) is answered from the dentry cache. Creates,
    // renames and links through the mount replace the negative entry.
    timer.set_result(res);
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    e.entry_timeout = fs.options.negative_timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  ReplyEntryOrErr(req, fs, res, entry, timer);
}

void DoForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kForget);
  if (!IsControlNode(ino)) fs.backend->Forget(ino, nlookup);
  fuse_reply_none(req);
}

void DoForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kForget);
  for (size_t i = 0; i < count; ++i) {
    if (!IsControlNode(forgets[i].ino)) {
      fs.backend->Forget(forgets[i].ino, forgets[i].nlookup);
    }
  }
  fuse_reply_none(req);
}

void DoGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kGetattr);
  struct stat st;
  if (IsControlNode(ino)) {
    st = fs.control.Attr(ino);
  } else if (int res = fs.backend->GetAttr(ino, &st); res != 0) {
    timer.set_result(res);
    fuse_reply_err(req, -res);
    return;
  }
  fuse_reply_attr(req, &st, fs.options.attr_timeout);
}

void DoSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
               fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kSetattr);
  if (IsControlNode(ino)) {
    timer.set_result(-EPERM);
    fuse_reply_err(req, EPERM);
    return;
  }
  struct Mapping {
    int fuse_bit;
    unsigned field;
  };
  static constexpr Mapping kMap[] = {
      {FUSE_SET_ATTR_MODE, backend::kSetMode},
      {FUSE_SET_ATTR_UID, backend::kSetUid},
      {FUSE_SET_ATTR_GID, backend::kSetGid},
      {FUSE_SET_ATTR_SIZE, backend::kSetSize},
      {FUSE_SET_ATTR_ATIME, backend::kSetAtime},
      {FUSE_SET_ATTR_MTIME, backend::kSetMtime},
      {FUSE_SET_ATTR_ATIME_NOW, backend::kSetAtimeNow},
      {FUSE_SET_ATTR_MTIME_NOW, backend::kSetMtimeNow},
      {FUSE_SET_ATTR_CTIME, backend::kSetCtime},
  };
  backend::SetAttrRequest request;
  for (const Mapping& m : kMap) {
    if (to_set & m.fuse_bit) request.valid |= m.field;
  }
  request.attr = *attr;
  if (fi != nullptr) request.file = reinterpret_cast<backend::File*>(fi->fh);
  struct stat out;
  int res = fs.backend->SetAttr(ino, request, &out);
  // An unprivileged truncate or chown (FUSE_HANDLE_KILLPRIV_V2, asked for
  // with passthrough or the ceph backend: fuse_features.cc) clears set-id
  // bits.
  if (res == 0 && (to_set & FUSE_SET_ATTR_KILL_SUID) &&
      fs.killpriv_v2.load(std::memory_order_acquire)) {
    res = KillSetIdBits(fs, ino);
    if (res == 0) res = fs.backend->GetAttr(ino, &out);
  }
  timer.set_result(res);
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_reply_attr(req, &out, fs.options.attr_timeout);
}

void DoReadlink(fuse_req_t req, fuse_ino_t ino) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kReadlink);
  std::string target;
  int res = IsControlNode(ino) ? -EINVAL : fs.backend->ReadLink(ino, &target);
  timer.set_result(res);
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_reply_readlink(req, target.c_str());
}

// Names the control directory owns, and parents that are control nodes,
// cannot take new entries.
bool RefuseCreate(fuse_req_t req, fuse_ino_t parent, const char* name,
                  OpTimer& timer) {
  if (IsReservedName(parent, name) || IsControlNode(parent)) {
    timer.set_result(-EPERM);
    fuse_reply_err(req, EPERM);
    return true;
  }
  return false;
}

void DoMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
             dev_t rdev) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kMknod);
  if (RefuseCreate(req, parent, name, timer)) return;
  backend::Entry entry;
  int res =
      fs.backend->MkNod(CallerOf(req, true), parent, name, mode, rdev, &entry);
  ReplyEntryOrErr(req, fs, res, entry, timer);
}

void DoMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kMkdir);
  if (RefuseCreate(req, parent, name, timer)) return;
  backend::Entry entry;
  int res = fs.backend->MkDir(CallerOf(req, true), parent, name, mode, &entry);
  ReplyEntryOrErr(req, fs, res, entry, timer);
}

void DoSymlink(fuse_req_t req, const char* link, fuse_ino_t parent,
               const char* name) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kSymlink);
  if (RefuseCreate(req, parent, name, timer)) return;
  backend::Entry entry;
  int res =
      fs.backend->SymLink(CallerOf(req, true), link, parent, name, &entry);
  ReplyEntryOrErr(req, fs, res, entry, timer);
}

void DoLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
            const char* newname) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kLink);
  if (RefuseCreate(req, newparent, newname, timer)) return;
  if (IsControlNode(ino)) {
    timer.set_result(-EPERM);
    fuse_reply_err(req, EPERM);
    return;
  }
  backend::Entry entry;
  int res = fs.backend->Link(ino, newparent, newname, &entry);
  ReplyEntryOrErr(req, fs, res, entry, timer);
}

void DoUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kUnlink);
  int res = IsReservedName(parent, name) || IsControlNode(parent)
                ? -EPERM
                : fs.backend->Unlink(parent, name);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kRmdir);
  int res = IsReservedName(parent, name) || IsControlNode(parent)
                ? -EPERM
                : fs.backend->RmDir(parent, name);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoRename(fuse_req_t req, fuse_ino_t parent, const char* name,
              fuse_ino_t newparent, const char* newname, unsigned int flags) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kRename);
  int res;
  if (IsReservedName(parent, name) || IsReservedName(newparent, newname) ||
      IsControlNode(parent) || IsControlNode(newparent)) {
    res = -EPERM;
  } else if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
    res = -EINVAL;  // unknown flags
  } else {
    res = fs.backend->Rename(parent, name, newparent, newname, flags);
  }
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoStatfs(fuse_req_t req, fuse_ino_t ino) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kStatfs);
  struct statvfs st;
  int res =
      fs.backend->StatFs(IsControlNode(ino) ? fs.backend->root() : ino, &st);
  timer.set_result(res);
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_reply_statfs(req, &st);
}

}  // namespace

void AssignEntryOps(fuse_lowlevel_ops* ops) {
  ops->lookup = DoLookup;
  ops->forget = DoForget;
  ops->forget_multi = DoForgetMulti;
  ops->getattr = DoGetattr;
  ops->setattr = DoSetattr;
  ops->readlink = DoReadlink;
  ops->mknod = DoMknod;
  ops->mkdir = DoMkdir;
  ops->symlink = DoSymlink;
  ops->link = DoLink;
  ops->unlink = DoUnlink;
  ops->rmdir = DoRmdir;
  ops->rename = DoRename;
  ops->statfs = DoStatfs;
}

}  // namespace fgds::fusefs
