// FUSE handlers for open files: open, create, read, write, flush, release,
// fsync, fallocate, copy_file_range, lseek; and the control files.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fusefs/control_dir.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {
namespace {

backend::File* FileOf(fuse_file_info* fi) {
  return reinterpret_cast<backend::File*>(fi->fh);
}

// An open control file: its whole content, captured at open so that one
// reader sees one consistent snapshot.
struct ControlFile {
  std::string content;
};

// Open flags as the backing file needs them.
int BackingFlags(const Filesystem& fs, int flags) {
  if (fs.options.writeback_cache) {
    // With a writeback cache the kernel reads pages to fill partial writes
    // and does O_APPEND itself (it knows the size); the backing descriptor
    // must allow reads and must not append on its own.
    if ((flags & O_ACCMODE) == O_WRONLY) flags = (flags & ~O_ACCMODE) | O_RDWR;
    flags &= ~O_APPEND;
  }
  return flags;
}

// Fills the open reply for `file` of `node`: passthrough where the mount
// has it and PassthroughFiles agrees (passthrough.h), else served by us.
// Pair with UnsetOpenReply when the reply fails. `mode`: the file's mode
// as the backend just read it for this open (a create's entry), or 0 when
// unknown (then read here).
void SetOpenReply(fuse_req_t req, Filesystem& fs, backend::NodeId node,
                  backend::File* file, fuse_file_info* fi, mode_t mode = 0) {
  fi->fh = reinterpret_cast<uint64_t>(file);
  fi->direct_io = fs.options.direct_io;
  fi->keep_cache = fs.options.keep_cache && fs.backend->KeepCache(file);
  // No FLUSH at close where it would do nothing: one round trip less for
  // every close. (With the writeback cache the kernel flushes anyway: its
  // FLUSH carries the dirty pages' write-back.)
  fi->noflush = !fs.backend->NeedsFlush(file);
  if (!fs.passthrough.load(std::memory_order_acquire)) return;
  // Pages the mount cached in an earlier open served by us may be stale:
  // passthrough writes since then went to the backing file alone.
  fi->keep_cache = 0;
  // O_DIRECT openers too: the kernel refuses any other open of a node with
  // a backing file (EIO), and in passthrough O_DIRECT is the backing
  // file's, alignment rules included, as natively.
  const int fd = fs.backend->PassthroughFd(file);
  if (fd < 0) return;
  if (mode == 0) {
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    mode = st.st_mode;
  }
  if (!S_ISREG(mode)) return;
  const int backing_id = fs.passthrough_files.Open(req, node, file, fd, mode);
#ifdef FUSE_CAP_PASSTHROUGH
  if (backing_id > 0) {
    fi->backing_id = backing_id;
  }
#else
  (void)backing_id;
#endif
}

// Undoes SetOpenReply (its passthrough registration) for a file released
// or never opened.
void UnsetOpenReply(fuse_req_t req, Filesystem& fs, backend::File* file) {
  if (fs.passthrough.load(std::memory_order_acquire)) {
    fs.passthrough_files.Release(req, fs.backend->NodeOf(file), file);
  }
}

void OpenControl(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi,
                 OpTimer& timer) {
  Filesystem& fs = Fs(req);
  if (!fs.control.IsFile(ino)) {
    timer.set_result(-EISDIR);
    fuse_reply_err(req, EISDIR);
    return;
  }
  if ((fi->flags & O_ACCMODE) != O_RDONLY) {
    timer.set_result(-EACCES);
    fuse_reply_err(req, EACCES);
    return;
  }
  auto* file = new ControlFile{fs.control.Content(ino)};
  fi->fh = reinterpret_cast<uint64_t>(file);
  fi->direct_io = 1;  // size 0 in getattr; content comes from read alone
  fi->nonseekable = 0;
  fi->noflush = 1;  // DoFlush has nothing to do for a control file
  if (fuse_reply_open(req, fi) != 0) delete file;
}

void DoOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kOpen);
  if (IsControlNode(ino)) {
    OpenControl(req, ino, fi, timer);
    return;
  }
  backend::File* file = nullptr;
  int res = fs.backend->Open(ino, BackingFlags(fs, fi->flags), &file);
  // An unprivileged O_TRUNC open clears set-id bits, as truncate(2) does.
  // With FUSE_HANDLE_KILLPRIV_V2 the kernel says when; else it says
  // nothing (it leaves O_TRUNC to us, FUSE_ATOMIC_O_TRUNC), and the
  // caller's uid decides, as for our other writes.
  if (res == 0 &&
      (fs.killpriv_v2.load(std::memory_order_relaxed)
           ? KillSuidgidAsked(fs, fi)
           : (fi->flags & O_TRUNC) && fuse_req_ctx(req)->uid != 0)) {
    res = KillSetIdBits(fs, ino);
  }
  timer.set_result(res);
  if (res != 0) {
    if (file != nullptr) fs.backend->Release(file);
    fuse_reply_err(req, -res);
    return;
  }
  SetOpenReply(req, fs, ino, file, fi);
  if (fuse_reply_open(req, fi) != 0) {
    UnsetOpenReply(req, fs, file);
    fs.backend->Release(file);
  }
}

// Answers a create (named or O_TMPFILE) whose backend call returned `res`:
// the entry and the open file, or the error. If the reply cannot be sent
// (the caller was interrupted), the file and the node's lookup are given
// back, as the kernel will never release them.
void ReplyCreated(fuse_req_t req, Filesystem& fs, int res,
                  const backend::Entry& entry, backend::File* file,
                  fuse_file_info* fi) {
  if (res != 0) {
    fuse_reply_err(req, -res);
    return;
  }
  fuse_entry_param e;
  FillEntry(fs, entry, &e);
  // The create's own stat of the new file: no second one.
  SetOpenReply(req, fs, entry.node, file, fi, entry.attr.st_mode);
  if (fuse_reply_create(req, &e, fi) != 0) {
    UnsetOpenReply(req, fs, file);
    fs.backend->Release(file);
    fs.backend->Forget(entry.node, 1);
  }
}

void DoCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
              fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kCreate);
  if (IsReservedName(parent, name) || IsControlNode(parent)) {
    timer.set_result(-EPERM);
    fuse_reply_err(req, EPERM);
    return;
  }
  backend::Entry entry;
  backend::File* file = nullptr;
  int res = fs.backend->Create(CallerOf(req, true), parent, name, mode,
                               BackingFlags(fs, fi->flags), &entry, &file);
  timer.set_result(res);
  ReplyCreated(req, fs, res, entry, file, fi);
}

#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 15)
// open(2) with O_TMPFILE (FUSE_TMPFILE, kernel 6.x): libfuse grew the
// operation in 3.15; built against an older one the kernel gets ENOSYS and
// the caller EOPNOTSUPP, as on a filesystem without unnamed files.
void DoTmpfile(fuse_req_t req, fuse_ino_t parent, mode_t mode,
               fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kCreate);
  if (IsControlNode(parent)) {
    timer.set_result(-EPERM);
    fuse_reply_err(req, EPERM);
    return;
  }
  backend::Entry entry;
  backend::File* file = nullptr;
  int res = fs.backend->TmpFile(CallerOf(req, true), parent, mode,
                                BackingFlags(fs, fi->flags), &entry, &file);
  timer.set_result(res);
  ReplyCreated(req, fs, res, entry, file, fi);
}
#endif

// Whether `req` came through FUSE over io_uring. Its reply must then leave
// from this thread: libfuse 3.18.3 hands a reply from another thread to the
// ring under a lock, but the ring's own thread submits without taking it
// (io_uring_submit_and_wait in fuse_uring_thread), so the two race on the
// submission queue. The kernel can then take a half-written entry, or the
// queue's tail moves back and the kernel runs a ring's worth of stale ones
// (it logs "FUSE_IO_URING_COMMIT_AND_FETCH failed err=-2" and "commit_id
// ... not found"), after which libfuse finds no free entry for that
// queue's replies: any request on it, a write too, is never answered, and
// its caller waits forever while every daemon thread is idle. Seen on the
// development VM (a usrbio_coherence_test daemon left with 7 requests
// unanswered right after those kernel lines); the once-seen POSIX bench
// hang, a FUSE write never answered with the daemon idle, fits it.
bool ThroughUring(fuse_req_t req) {
#if FUSE_MAJOR_VERSION > 3 || FUSE_MINOR_VERSION >= 18
  return fuse_req_is_uring(req);
#else
  (void)req;
  return false;
#endif
}

// A read in flight: owns the reply buffer until the backend completes.
class ReadOp : public backend::FileIoCompletion {
 public:
  ReadOp(fuse_req_t req, Filesystem& fs, OpStats::Clock::time_point start)
      : req_(req),
        fs_(fs),
        start_(start),
        buffer_(fs.read_buffers),
        receiver_(std::this_thread::get_id()) {}
  // Freed without completing: SubmitIo threw, and the table's guard fails
  // the request; it counts as an error.
  ~ReadOp() override {
    if (!completed_) {
      fs_.stats.Record(Op::kRead, OpStats::Clock::now() - start_, 0,
                       OpTimer::kUnwound);
    }
  }

  // Null when the pool is out of memory.
  char* buffer() { return buffer_.get(); }

  void Complete(int64_t result) override {
    if (ThroughUring(req_) && std::this_thread::get_id() != receiver_) {
      fs_.uring_replies_off_thread.fetch_add(1, std::memory_order_relaxed);
    }
    if (result < 0) {
      fuse_reply_err(req_, static_cast<int>(-result));
    } else {
      fuse_reply_buf(req_, buffer_.get(), static_cast<size_t>(result));
    }
    fs_.stats.Record(Op::kRead, OpStats::Clock::now() - start_,
                     result > 0 ? static_cast<uint64_t>(result) : 0,
                     result < 0 ? static_cast<int>(-result) : 0);
    completed_ = true;
    delete this;
  }

 private:
  const fuse_req_t req_;
  Filesystem& fs_;
  const OpStats::Clock::time_point start_;
  const PooledBuffer buffer_;
  const std::thread::id receiver_;
  bool completed_ = false;
};

void ReadControl(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi) {
  auto* file = reinterpret_cast<ControlFile*>(fi->fh);
  const std::string& content = file->content;
  if (off < 0 || static_cast<size_t>(off) >= content.size()) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  size_t n = std::min(size, content.size() - static_cast<size_t>(off));
  // Reply from a copy: once the kernel has the reply, the reader may close
  // and its RELEASE (another FUSE thread) free `file` while this thread is
  // still returning from writev; ASan checks the buffer only then. Control
  // files are a few hundred bytes.
  const std::string slice = content.substr(static_cast<size_t>(off), n);
  fuse_reply_buf(req, slice.data(), slice.size());
}

void DoRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
            fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  if (IsControlNode(ino)) {
    OpTimer timer(fs.stats, Op::kRead);
    ReadControl(req, size, off, fi);
    return;
  }
  // The kernel never asks for more than max_read; clamp anyway, the
  // buffer is that big.
  size = std::min(size, fs.read_buffers.buffer_size());
  auto op = std::make_unique<ReadOp>(req, fs, OpStats::Clock::now());
  if (op->buffer() == nullptr) {
    op.release()->Complete(-ENOMEM);
    return;
  }
  // An opener that asked for O_DIRECT gets it where the request allows
  // (its reads then skip the backing file's page cache too); others read
  // through the page cache, as the kernel's own cache of the mount
  // expects to be filled.
  const uint32_t flags = (fi->flags & O_DIRECT) ? backend::kIoPreferDirect : 0;
  backend::FileIoRequest request{
      backend::FileOp::kRead,     FileOf(fi), nullptr, op->buffer(), size,
      static_cast<uint64_t>(off), flags,      op.get()};
  if (ThroughUring(req)) {
    // In this thread, as writes are (see ThroughUring). The ring thread
    // that took the request waits for it; the kernel spreads requests over
    // one ring per CPU, so the others go on.
    backend::IoPath path;
    const int64_t res = fs.backend->RunIo(request, &path);
    op->set_path(path);
    op.release()->Complete(res);
    return;
  }
  fs.backend->SubmitIo({&request, 1});
  // Submitted: the request completes exactly once, which deletes op. (Had
  // SubmitIo thrown, op would have been freed here and the guard replied.)
  op.release();
}

// Writes run in the FUSE thread (Backend::RunIo): the request's data lives
// only until we reply, so the write is synchronous either way, and a trip
// through the io_uring threads only added two wakeups to its latency
// (measured: 2.0 ms vs 1.1 ms per 1 MiB write). Splicing writes from
// /dev/fuse straight into the file (FUSE_CAP_SPLICE_READ) measured slower
// still (2.2 ms), so requests arrive in memory.
//
// Whole aligned pages are offered to the backend from page-aligned memory
// with kIoPreferDirect: the local backend then writes them O_DIRECT, so the
// data skips the backing file's page cache, where it would be a second
// cached copy of what the kernel already holds in the mount's cache
// (copying into that second cache was 65% of the daemon's write time).
// The request's data follows its header in libfuse's buffer, so it is
// never page-aligned: such writes are staged in an aligned pool buffer.
//
// `flags` are extra backend::kIo* flags for the request.
ssize_t WriteData(Filesystem& fs, backend::File* file, fuse_bufvec* in_buf,
                  off_t off, uint32_t flags) {
  constexpr size_t kPage = 4096;
  const size_t size = fuse_buf_size(in_buf);
  backend::FileIoRequest request{
      backend::FileOp::kWrite,    file, nullptr, nullptr, size,
      static_cast<uint64_t>(off), flags};
  std::optional<PooledBuffer> staged;
  const bool whole_pages = size > 0 && size % kPage == 0 && off % kPage == 0 &&
                           size <= fs.read_buffers.buffer_size();
  const bool in_memory = in_buf->count == 1 && in_buf->idx == 0 &&
                         in_buf->off == 0 &&
                         !(in_buf->buf[0].flags & FUSE_BUF_IS_FD);
  if (whole_pages || !in_memory) {
    if (size > fs.read_buffers.buffer_size()) return -EINVAL;
    staged.emplace(fs.read_buffers);
    if (staged->get() == nullptr) return -ENOMEM;
    fuse_bufvec out = FUSE_BUFVEC_INIT(size);
    out.buf[0].mem = staged->get();
    ssize_t copied =
        fuse_buf_copy(&out, in_buf, static_cast<fuse_buf_copy_flags>(0));
    if (copied != static_cast<ssize_t>(size)) {
      return copied < 0 ? copied : -EIO;
    }
    request.buf = staged->get();
    if (whole_pages) request.flags |= backend::kIoPreferDirect;
  } else {
    request.buf = static_cast<char*>(in_buf->buf[0].mem);
  }
  backend::IoPath path;
  return static_cast<ssize_t>(fs.backend->RunIo(request, &path));
}

void DoWriteBuf(fuse_req_t req, fuse_ino_t ino, fuse_bufvec* in_buf, off_t off,
                fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kWrite);
  if (IsControlNode(ino)) {
    timer.set_result(-EBADF);
    fuse_reply_err(req, EBADF);
    return;
  }
  // Cached writes have the kernel drop set-id bits (through setattr);
  // direct I/O leaves it to the filesystem, so the backend does it, as for
  // usrbio writes. With passthrough on, the writes that still reach us are
  // set-id files' (cached: the kernel has cleared the bits already, so this
  // costs an fstat and changes nothing), or a file's whose node could not
  // get a backing file.
  // With FUSE_HANDLE_KILLPRIV_V2 the kernel says when (KillSuidgidAsked).
  const bool kill_privileges =
      fs.killpriv_v2.load(std::memory_order_relaxed)
          ? KillSuidgidAsked(fs, fi)
          : (fs.options.direct_io ||
             fs.passthrough.load(std::memory_order_relaxed)) &&
                fuse_req_ctx(req)->uid != 0 && !fi->writepage;
  ssize_t res = WriteData(fs, FileOf(fi), in_buf, off,
                          kill_privileges ? backend::kIoKillPrivileges : 0);
  timer.set_result(res, /*add_bytes=*/true);
  if (res < 0) {
    fuse_reply_err(req, static_cast<int>(-res));
    return;
  }
  fuse_reply_write(req, static_cast<size_t>(res));
}

void DoFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kFlush);
  int res = IsControlNode(ino) ? 0 : fs.backend->Flush(FileOf(fi));
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kRelease);
  if (IsControlNode(ino)) {
    delete reinterpret_cast<ControlFile*>(fi->fh);
  } else {
    UnsetOpenReply(req, fs, FileOf(fi));
    fs.backend->Release(FileOf(fi));
  }
  fuse_reply_err(req, 0);
}

void DoFsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kFsync);
  int res = IsControlNode(ino) ? 0 : fs.backend->Fsync(FileOf(fi), datasync);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
                 off_t length, fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kFallocate);
  int res = IsControlNode(ino)
                ? -EBADF
                : fs.backend->Fallocate(FileOf(fi), mode, offset, length);
  timer.set_result(res);
  fuse_reply_err(req, -res);
}

void DoCopyFileRange(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                     fuse_file_info* fi_in, fuse_ino_t ino_out, off_t off_out,
                     fuse_file_info* fi_out, size_t len, int flags) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kCopyFileRange);
  ssize_t res;
  if (IsControlNode(ino_in) || IsControlNode(ino_out)) {
    res = -EXDEV;  // the kernel then falls back to read + write
  } else {
    res = fs.backend->CopyFileRange(FileOf(fi_in), off_in, FileOf(fi_out),
                                    off_out, len, static_cast<unsigned>(flags));
  }
  timer.set_result(res, /*add_bytes=*/true);
  if (res < 0) {
    fuse_reply_err(req, static_cast<int>(-res));
    return;
  }
  fuse_reply_write(req, static_cast<size_t>(res));
}

void DoLseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
             fuse_file_info* fi) {
  Filesystem& fs = Fs(req);
  OpTimer timer(fs.stats, Op::kLseek);
  off_t res =
      IsControlNode(ino) ? -ESPIPE : fs.backend->Lseek(FileOf(fi), off, whence);
  timer.set_result(res);
  if (res < 0) {
    fuse_reply_err(req, static_cast<int>(-res));
    return;
  }
  fuse_reply_lseek(req, res);
}

}  // namespace

void AssignFileOps(fuse_lowlevel_ops* ops) {
  ops->open = DoOpen;
  ops->create = DoCreate;
  ops->read = DoRead;
  ops->write_buf = DoWriteBuf;
  ops->flush = DoFlush;
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 15)
  ops->tmpfile = DoTmpfile;
#endif
  ops->release = DoRelease;
  ops->fsync = DoFsync;
  ops->fallocate = DoFallocate;
  ops->copy_file_range = DoCopyFileRange;
  ops->lseek = DoLseek;
}

}  // namespace fgds::fusefs
