// FUSE handlers for directories: opendir, readdir, readdirplus, releasedir,
// fsyncdir; the control directory's listing is synthesized here.
#include <dirent.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>

#include "fusefs/control_dir.h"
#include "fusefs/exception_errno.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {
namespace {

backend::Dir* DirOf(fuse_file_info* fi) {
  return reinterpret_cast<backend::Dir*>(fi->fh);
}

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' &&
         (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

void DoOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kOpendir);
  if (IsControlNode(ino)) {
    if (ino != kControlDirNode) {
      timer.set_result(-ENOTDIR);
      fuse_reply_err(req, ENOTDIR);
      return;
    }
    fi->fh = 0;
    fuse_reply_open(req, fi);
    return;
  }
  backend::Dir* dir = nullptr;
  int res = fs.backend->OpenDir(ino, &dir);
  timer.set_result(res);
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fi->fh = reinterpret_cast<uint64_t>(dir);
  if (fuse_reply_open(req, fi) != 0) fs.backend->ReleaseDir(dir);
}

// Fills `buf` with control directory entries from `offset` on: ".", ".."
// and then the files, offset i + 1 after entry i.
size_t FillControlDir(fuse_req_t req, const Filesystem& fs, bool plus,
                      char* buf, size_t size, off_t offset) {
  const ControlDir& control = fs.control;
  const off_t total = 2 + static_cast<off_t>(control.file_count());
  size_t used = 0;
  for (off_t i = offset; i < total; ++i) {
    const char* name;
    struct stat st = {};
    uint64_t node = 0;  // 0: no entry for the kernel ("." and "..")
    if (i == 0) {
      name = ".";
      st = control.Attr(kControlDirNode);
    } else if (i == 1) {
      name = "..";
      st.st_ino = FUSE_ROOT_ID;
      st.st_mode = S_IFDIR;
    } else {
      node = ControlDir::FileNode(static_cast<size_t>(i - 2));
      name = control.file_name(static_cast<size_t>(i - 2)).c_str();
      st = control.Attr(node);
    }
    size_t n;
    if (plus) {
      // Control nodes keep no lookup count, so handing them out is free.
      fuse_entry_param e;
      std::memset(&e, 0, sizeof(e));
      e.attr = st;
      e.ino = node;
      if (node != 0) {
        e.attr_timeout = fs.options.attr_timeout;
        e.entry_timeout = fs.options.entry_timeout;
      }
      n = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, i + 1);
    } else {
      n = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
    }
    if (n > size - used) break;
    used += n;
  }
  return used;
}

void DoReaddirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                     fuse_file_info* fi, bool plus) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, plus ? Op::kReaddirplus : Op::kReaddir);
  std::unique_ptr<char[]> buf(new char[size]);
  if (IsControlNode(ino)) {
    size_t used = FillControlDir(req, fs, plus, buf.get(), size, offset);
    fuse_reply_buf(req, buf.get(), used);
    return;
  }
  size_t used = 0;
  int lookup_error = 0;
  auto emit = [&](const backend::DirEntry& entry) -> bool {
    // The control directory is reachable by name only.
    if (ino == FUSE_ROOT_ID && entry.name == kControlDirName) return true;
    size_t room = size - used;
    if (!plus) {
      struct stat st = {};
      st.st_ino = entry.ino;
      st.st_mode = entry.type << 12;
      size_t n = fuse_add_direntry(req, buf.get() + used, room, entry.name, &st,
                                   entry.next_offset);
      if (n > room) return false;
      used += n;
      return true;
    }
    fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    backend::Entry found;
    // Node 0 sends the name alone, as readdir would. For a node the kernel
    // already holds, a full entry would only refresh what it caches anyway
    // (until its own timeouts say otherwise), and the kernel drops the
    // inode's cached ACLs with every such refresh: `ls -l` would then ask
    // for each file's ACL again, every time.
    if (IsDotOrDotDot(entry.name) || fs.backend->HoldsEntry(ino, entry.ino)) {
      e.attr.st_ino = entry.ino;
      e.attr.st_mode = entry.type << 12;
    } else {
      int res = fs.backend->Lookup(ino, entry.name, &found);
      if (res == -ENOENT) return true;  // removed since it was listed
      if (res != 0) {
        lookup_error = res;
        return false;
      }
      FillEntry(fs, found, &e);
    }
    size_t n = fuse_add_direntry_plus(req, buf.get() + used, room, entry.name,
                                      &e, entry.next_offset);
    if (n > room) {
      // Not sent, so the kernel will not count this lookup.
      if (e.ino != 0) fs.backend->Forget(e.ino, 1);
      return false;
    }
    used += n;
    return true;
  };
  int res;
  try {
    res = fs.backend->ReadDir(DirOf(fi), offset, emit);
  } catch (...) {
    // With nothing placed, the table's guard answers the error. Entries
    // already placed hold lookups the backend counted: they must reach
    // the kernel, which will forget them, or those nodes would stay
    // counted for good. As for an error below, the next call (which
    // starts after them) reports it.
    if (used == 0) throw;
    timer.set_result(-ExceptionErrno(std::current_exception()));
    fuse_reply_buf(req, buf.get(), used);
    return;
  }
  if (res == 0 && used == 0) res = lookup_error;
  timer.set_result(res);
  // Entries already placed must reach the kernel (their lookups counted),
  // so an error after some entries is reported on the next call instead.
  if (res != 0 && used == 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_reply_buf(req, buf.get(), used);
}

void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
               fuse_file_info* fi) {
  DoReaddirCommon(req, ino, size, offset, fi, false);
}

void DoReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
                   fuse_file_info* fi) {
  DoReaddirCommon(req, ino, size, offset, fi, true);
}

void DoReleasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kReleasedir);
  if (!IsControlNode(ino)) fs.backend->ReleaseDir(DirOf(fi));
  fuse_reply_err(req, 0);
}

void DoFsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kFsyncdir);
  int res = IsControlNode(ino) ? 0 : fs.backend->FsyncDir(DirOf(fi), datasync);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

}  // namespace

void AssignDirOps(fuse_lowlevel_ops* ops) {
  ops->opendir = DoOpendir;
  ops->readdir = DoReaddir;
  ops->readdirplus = DoReaddirplus;
  ops->releasedir = DoReleasedir;
  ops->fsyncdir = DoFsyncdir;
}

}  // namespace fgds::fusefs
