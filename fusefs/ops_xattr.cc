// FUSE handlers for extended attributes.
#include <linux/xattr.h>

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

// The attributes that hold POSIX ACLs.
bool IsPosixAcl(const char* name) {
  return strcmp(name, XATTR_NAME_POSIX_ACL_ACCESS) == 0 ||
         strcmp(name, XATTR_NAME_POSIX_ACL_DEFAULT) == 0;
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
  }
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kGetxattr);
  ReplySized(req, size, timer, [&](char* buf, size_t n) {
    return IsControlNode(ino) ? -ENODATA
                              : fs.backend->GetXattr(ino, name, buf, n);
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
