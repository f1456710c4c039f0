// The libfuse operation table and connection setup.
//
// Every request handler is called through a guard: whatever it throws
// (std::bad_alloc, std::system_error, anything) becomes an errno reply for
// that request (exception_errno.h) instead of unwinding into libfuse, which
// would end the daemon and the mount for every user. The guard wraps the
// whole table, so a handler added in an ops_*.cc file is guarded without
// writing a try block.
#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <type_traits>

#include "backend/request_caller.h"
#include "fusefs/exception_errno.h"
#include "fusefs/filesystem.h"

namespace fgds::fusefs {
namespace {

void DoInit(void* userdata, fuse_conn_info* conn) {
  auto* fs = static_cast<Filesystem*>(userdata);
  if (fs->options.writeback_cache &&
      (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
    conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  }
  // Locks stay the kernel's local locks: we implement no lock operations,
  // and the kernel must not expect us to.
  conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
  // POSIX ACLs: the kernel enforces them and caches them per inode (so
  // `ls -l` asks once per inode, not per listing), and the backing
  // filesystem keeps them, with the mode, in sync (chmod, inheritance). It
  // then leaves the umask to us, for a default ACL replaces it
  // (backend/local/creation_mode.h). Without this capability ACLs are
  // refused (ops_xattr.cc): stored, they would not be honoured.
  if ((conn->capable & FUSE_CAP_POSIX_ACL) &&
      (conn->capable & FUSE_CAP_DONT_MASK)) {
    conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
    fs->posix_acl.store(true, std::memory_order_release);
  }
  // The backing write runs as root, which keeps set-uid bits a user's write
  // must clear; leave killing privileges to the kernel.
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  // Write data arrives in memory, not spliced (see DoWriteBuf).
  conn->want &= ~FUSE_CAP_SPLICE_READ;
  // readdirplus (libfuse asks for it, in the kernel's "auto" mode) hands
  // the kernel each entry's attributes with the listing, saving a lookup
  // per entry of a directory listed with `ls -l`, but only if the kernel
  // may keep them: without entry and attribute caching (--cache strict)
  // each would be asked again at once, and the listing only costs a
  // lookup per entry in the daemon.
  if (fs->options.entry_timeout <= 0 || fs->options.attr_timeout <= 0) {
    conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
  }
  conn->max_write = fs->options.max_io;
  // Must match the max_read mount option given to fuse_session_new.
  conn->max_read = fs->options.max_io;
  // Read-ahead and writeback are "background" requests: allow enough in
  // flight to keep the io_uring rings busy.
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  // The kernel keeps the smaller of this and the read-ahead the daemon set
  // in sysfs before this reply (RaiseReadahead in daemon.cc); libfuse
  // offers the kernel's default (128 KiB), which would undo it.
  // Passthrough and FUSE over io_uring (fuse_features.h).
  NegotiateFeatures(*fs, conn);
  if (fs->options.readahead_kb != 0) {
    conn->max_readahead = static_cast<unsigned>(
        std::min<uint64_t>(uint64_t{fs->options.readahead_kb} * 1024,
                           std::numeric_limits<unsigned>::max()));
  }
}

// The handlers of ops_*.cc, unguarded. Built once, immutable after.
const fuse_lowlevel_ops& Handlers() {
  static const fuse_lowlevel_ops handlers = [] {
    fuse_lowlevel_ops ops;
    std::memset(&ops, 0, sizeof(ops));
    AssignEntryOps(&ops);
    AssignFileOps(&ops);
    AssignDirOps(&ops);
    AssignXattrOps(&ops);
    return ops;
  }();
  return handlers;
}

// Requests the kernel expects no reply to: a failure is answered with
// fuse_reply_none, which only frees the request.
template <auto A, auto B>
constexpr bool SameMember() {
  if constexpr (std::is_same_v<decltype(A), decltype(B)>) {
    return A == B;
  } else {
    return false;
  }
}
template <auto Member>
constexpr bool kRepliesNone =
    SameMember<Member, &fuse_lowlevel_ops::forget>() ||
    SameMember<Member, &fuse_lowlevel_ops::forget_multi>() ||
    SameMember<Member, &fuse_lowlevel_ops::retrieve_reply>();

// Namespace requests, whose backend calls check permissions: a backend that
// wants each call's caller (Backend::WantsRequestCaller) gets it for these.
// Not the data path (read, write, fsync act on a handle opened with the
// caller's credentials), not forget or release (no caller to speak of, and
// the kernel may send them from any context), not getattr (the most
// frequent request; stat needs no permission on the file itself).
template <auto Member>
constexpr bool kNeedsCaller =
    SameMember<Member, &fuse_lowlevel_ops::lookup>() ||
    SameMember<Member, &fuse_lowlevel_ops::setattr>() ||
    SameMember<Member, &fuse_lowlevel_ops::readlink>() ||
    SameMember<Member, &fuse_lowlevel_ops::mknod>() ||
    SameMember<Member, &fuse_lowlevel_ops::mkdir>() ||
    SameMember<Member, &fuse_lowlevel_ops::unlink>() ||
    SameMember<Member, &fuse_lowlevel_ops::rmdir>() ||
    SameMember<Member, &fuse_lowlevel_ops::symlink>() ||
    SameMember<Member, &fuse_lowlevel_ops::rename>() ||
    SameMember<Member, &fuse_lowlevel_ops::link>() ||
    SameMember<Member, &fuse_lowlevel_ops::open>() ||
    SameMember<Member, &fuse_lowlevel_ops::opendir>() ||
    SameMember<Member, &fuse_lowlevel_ops::readdirplus>() ||
    SameMember<Member, &fuse_lowlevel_ops::setxattr>() ||
    SameMember<Member, &fuse_lowlevel_ops::getxattr>() ||
    SameMember<Member, &fuse_lowlevel_ops::listxattr>() ||
    SameMember<Member, &fuse_lowlevel_ops::removexattr>() ||
    SameMember<Member, &fuse_lowlevel_ops::create>();

// Turns the calling thread's cancellation off for its life. libfuse 3.18
// stops its io_uring threads with pthread_cancel: a handler cancelled at
// one of its system calls would unwind through Guarded::Call, which is
// noexcept (std::terminate: the daemon dumped core at a stop under load,
// its exit then held by a thread waiting in the kernel). libfuse's
// /dev/fuse workers run handlers with cancellation off too; a cancel sent
// meanwhile takes effect in libfuse's own loop afterwards.
class NoCancellation {
 public:
  NoCancellation() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_); }
  ~NoCancellation() { pthread_setcancelstate(old_, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

 private:
  int old_ = PTHREAD_CANCEL_ENABLE;
};

// Calls the handler `Member` of Handlers() and turns an exception into the
// request's reply. A handler must not throw after it replied (the request
// is freed then): every handler replies last.
template <auto Member>
struct Guarded;

template <typename... Args,
          void (*fuse_lowlevel_ops::*Member)(fuse_req_t, Args...)>
struct Guarded<Member> {
  static void Call(fuse_req_t req, Args... args) noexcept {
    NoCancellation no_cancellation;
    CountTransport(*static_cast<Filesystem*>(fuse_req_userdata(req)), req);
    try {
      if constexpr (kNeedsCaller<Member>) {
        if (Fs(req).backend->WantsRequestCaller()) {
          // Read before the handler runs: the request is freed by its
          // reply.
          const backend::Caller caller = CallerOf(req, /*with_groups=*/true);
          backend::ScopedRequestCaller scope(&caller);
          (Handlers().*Member)(req, args...);
          return;
        }
      }
      (Handlers().*Member)(req, args...);
    } catch (...) {
      if constexpr (kRepliesNone<Member>) {
        fuse_reply_none(req);
      } else {
        fuse_reply_err(req, ExceptionErrno(std::current_exception()));
      }
    }
  }
};

}  // namespace

void AssignOperations(fuse_lowlevel_ops* ops) {
  std::memset(ops, 0, sizeof(*ops));
  // init and destroy take no request: there is nothing to reply to, and
  // DoInit cannot throw.
  ops->init = DoInit;
  const fuse_lowlevel_ops& handlers = Handlers();
  // Every request member of libfuse 3.14's table (3.18 adds tmpfile and
  // statx); the assertion below fails when a libfuse version adds one, so
  // that it gets a line here.
#if FUSE_MAJOR_VERSION > 3 || FUSE_MINOR_VERSION >= 18
  constexpr size_t kMembers = 46;
#else
  constexpr size_t kMembers = 44;
#endif
  static_assert(sizeof(fuse_lowlevel_ops) == kMembers * sizeof(void (*)()),
                "fuse_lowlevel_ops changed: list its new members below");
#define FGDS_GUARD(member)                                    \
  if (handlers.member != nullptr) {                           \
    ops->member = &Guarded<&fuse_lowlevel_ops::member>::Call; \
  }
  FGDS_GUARD(lookup)
  FGDS_GUARD(forget)
  FGDS_GUARD(getattr)
  FGDS_GUARD(setattr)
  FGDS_GUARD(readlink)
  FGDS_GUARD(mknod)
  FGDS_GUARD(mkdir)
  FGDS_GUARD(unlink)
  FGDS_GUARD(rmdir)
  FGDS_GUARD(symlink)
  FGDS_GUARD(rename)
  FGDS_GUARD(link)
  FGDS_GUARD(open)
  FGDS_GUARD(read)
  FGDS_GUARD(write)
  FGDS_GUARD(flush)
  FGDS_GUARD(release)
  FGDS_GUARD(fsync)
  FGDS_GUARD(opendir)
  FGDS_GUARD(readdir)
  FGDS_GUARD(releasedir)
  FGDS_GUARD(fsyncdir)
  FGDS_GUARD(statfs)
  FGDS_GUARD(setxattr)
  FGDS_GUARD(getxattr)
  FGDS_GUARD(listxattr)
  FGDS_GUARD(removexattr)
  FGDS_GUARD(access)
  FGDS_GUARD(create)
  FGDS_GUARD(getlk)
  FGDS_GUARD(setlk)
  FGDS_GUARD(bmap)
  FGDS_GUARD(ioctl)
  FGDS_GUARD(poll)
  FGDS_GUARD(write_buf)
  FGDS_GUARD(retrieve_reply)
  FGDS_GUARD(forget_multi)
  FGDS_GUARD(flock)
  FGDS_GUARD(fallocate)
  FGDS_GUARD(readdirplus)
  FGDS_GUARD(copy_file_range)
  FGDS_GUARD(lseek)
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 15)
  FGDS_GUARD(tmpfile)
#endif
#if FUSE_MAJOR_VERSION > 3 || FUSE_MINOR_VERSION >= 18
  FGDS_GUARD(statx)
#endif
#undef FGDS_GUARD
}

}  // namespace fgds::fusefs
