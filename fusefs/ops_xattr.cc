// FUSE handlers for extended attributes.
#include <linux/xattr.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "fusefs/control_dir.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {
namespace {

// getxattr and listxattr share one reply protocol: size 0 asks for the
// length, otherwise the value itself (ERANGE if it does not fit).
template <typename Fetch>
void ReplySized(fuse_req_t req, size_t size, OpTimer& timer, Fetch fetch) {
  if (size == 0) {
    int res = fetch(nullptr, 0);
    timer.set_result(res);
    if (res < 0) {
      fuse_reply_err(req, -res);
    } else {
      fuse_reply_xattr(req, static_cast<size_t>(res));
    }
    return;
  }
  std::unique_ptr<char[]> value(new char[size]);
  int res = fetch(value.get(), size);
  timer.set_result(res);
  if (res < 0) {
    fuse_reply_err(req, -res);
  } else {
    fuse_reply_buf(req, value.get(), static_cast<size_t>(res));
  }
}

// The SELinux label. With SELinux active the kernel answers it from the
// inode's in-core label and never asks us; it reaches us only on a kernel
// without an LSM that claims it. ls -l asks for it on every file
// (libselinux lgetfilecon), and FUSE caches no xattr answer.
constexpr char kSelinuxXattr[] = "security.selinux";

// The attributes that hold POSIX ACLs.
bool IsPosixAcl(const char* name) {
  return strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS) == 0 ||
         strcmp(name, XATTR_NAME_POSIX_ACL_DEFAULT) == 0;
}

// An access ACL set by a caller outside the file's group, and without
// privilege, clears S_ISGID (the kernel's posix_acl_update_mode). The
// backing filesystem sees the daemon, which is privileged, set it, and the
// kernel's word for it (FUSE_SETXATTR_ACL_KILL_SGID) needs a libfuse newer
// than 3.14: so the rule is applied here. 0 or -errno.
int KillSetGidAfterAcl(fuse_req_t req, Filesystem& fs, fuse_ino_t ino) {
  if (fuse_req_ctx(req)->uid == 0) return 0;
  struct stat st;
  if (int res = fs.backend->GetAttr(ino, &st); res != 0) return res;
  if ((st.st_mode & S_ISGID) == 0) return 0;
  const backend::Caller caller = CallerOf(req, /*with_groups=*/true);
  if (caller.gid == st.st_gid ||
      std::find(caller.groups.begin(), caller.groups.end(), st.st_gid) !=
          caller.groups.end()) {
    return 0;
  }
  backend::SetAttrRequest request;
  request.valid = backend::kSetMode;
  request.attr.st_mode = st.st_mode & 07777 & ~S_ISGID;
  struct stat out;
  return fs.backend->SetAttr(ino, request, &out);
}

void DoSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name,
                const char* value, size_t size, int flags) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kSetxattr);
  int res;
  if (IsControlNode(ino)) {
    res = -EPERM;
  } else if (IsPosixAcl(name) &&
             !fs.posix_acl.load(std::memory_order_acquire)) {
    // The kernel would not enforce it: refuse rather than store an ACL
    // that grants and denies nothing.
    res = -EOPNOTSUPP;
  } else {
    res = fs.backend->SetXattr(ino, name, value, size, flags);
    if (res == 0 && strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS) == 0) {
      res = KillSetGidAfterAcl(req, fs, ino);
    }
  }
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kGetxattr);
  ReplySized(req, size, timer, [&](char* buf, size_t n) {
    if (IsControlNode(ino)) return -ENODATA;
    const int res = fs.backend->GetXattr(ino, name, buf, n);
    // The kernel asks for ACLs on every permission check (FUSE_POSIX_ACL)
    // and fails the check on any error but "none": a backing filesystem
    // without ACL support (EOPNOTSUPP) simply has none, or no user but
    // root could open anything.
    if (res == -EOPNOTSUPP && IsPosixAcl(name)) return -ENODATA;
    // No label: say "labels are not supported here", as a filesystem
    // without security labels does. Both mean "no label" to every caller,
    // but this one tools remember per filesystem (coreutils ls stops
    // asking for the mount's st_dev), where "none" costs a request per
    // file and listing. A label that exists is returned as it is.
    if (res == -ENODATA && strcmp(name, kSelinuxXattr) == 0) {
      return -EOPNOTSUPP;
    }
    return res;
  });
}

void DoListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kListxattr);
  ReplySized(req, size, timer, [&](char* buf, size_t n) {
    return IsControlNode(ino) ? 0 : fs.backend->ListXattr(ino, buf, n);
  });
}

void DoRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kRemovexattr);
  int res = IsControlNode(ino) ? -EPERM : fs.backend->RemoveXattr(ino, name);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

}  // namespace

void AssignXattrOps(fuse_lowlevel_ops* ops) {
  ops->setxattr = DoSetxattr;
  ops->getxattr = DoGetxattr;
  ops->listxattr = DoListxattr;
  ops->removexattr = DoRemovexattr;
}

}  // namespace fgds::fusefs
