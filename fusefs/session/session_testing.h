// File: fusefs/session/session_testing.h
//
// Test doubles for the daemon's usrbio side (ring_test.cc, session_test.cc):
//
// FakeBackend: a backend::Backend whose data path the test drives. SubmitIo
// records each request; the test completes them when it chooses, from a
// thread of its own, with the result and IoPath it chooses. It can also hold
// the calling (ring worker) thread inside SubmitIo, which gives a test a
// point where it knows exactly what the worker is doing. OpenNode hands out
// fake File handles and Release counts them. The namespace methods return
// -ENOSYS.
//
// ClientRing: the client's half of a ring in memory the test owns: the
// sealed memfd, the header as fgds_ior_create writes it, the two eventfds,
// and the client's side of the index and wakeup protocol (usrbio/ior.cc).
//
// Waits are bounded by kGuard: a guard against hangs, never a way to
// order events.
//
// Thread safety: FakeBackend is thread-safe; ClientRing is used by one test
// thread.
#ifndef FGDS_FUSEFS_SESSION_SESSION_TESTING_H_
#define FGDS_FUSEFS_SESSION_SESSION_TESTING_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "backend/backend.h"
#include "common/mutex.h"
#include "fgds/usrbio_ring.h"

namespace fgds::session::testing {

// How long a test waits for something that should happen at once.
inline constexpr std::chrono::seconds kGuard{10};

// Polls `done` until it is true or kGuard passed; returns its last value.
bool WaitUntil(const std::function<bool()>& done);

class FakeBackend final : public backend::Backend {
 public:
  FakeBackend() = default;
  ~FakeBackend() override;

  // ---- test controls ----

  // While held, SubmitIo records its batch and then blocks until
  // ReleaseSubmit (or HoldSubmits(false)).
  void HoldSubmits(bool hold);
  // Waits until `at_least` SubmitIo calls are blocked (held) at once; false
  // after kGuard.
  bool WaitForBlockedSubmit(int at_least = 1);
  // Lets the SubmitIo calls held now return; later ones are held again
  // while HoldSubmits(true) lasts.
  void ReleaseSubmit();
  // Completes every request SubmitIo receives inside the call, with `result`
  // and `path` (a backend refusing requests at once, as the contract allows).
  void CompleteInline(int64_t result, backend::IoPath path);

  // Waits until `count` requests were submitted in all; false after kGuard.
  bool WaitForRequests(size_t count);
  std::vector<backend::FileIoRequest> requests();
  // The size of each SubmitIo call's batch, in order.
  std::vector<size_t> batch_sizes();

  struct Done {
    size_t index;  // in requests()
    int64_t result;
    backend::IoPath path;
  };
  // Completes the requests in `dones` in order, on a new thread, and joins
  // it. A request completed twice fails the test.
  void Complete(const std::vector<Done>& dones);
  // Completes every request not completed yet with `result` (tear-down).
  void CompleteRest(int64_t result);
  size_t uncompleted();

  // OpenNode fails with `error` from now on (0: succeeds again).
  void FailOpens(int error);
  struct Opened {
    backend::NodeId node;
    int flags;
    backend::File* file;
  };
  std::vector<Opened> opens();
  // How often Release was called for `file`.
  int releases(backend::File* file);
  // Handles opened and not released yet.
  int open_handles();

  // ---- backend::Backend ----
  backend::NodeId root() const override { return 1; }
  std::string EngineName() const override { return "fake"; }
  int Lookup(backend::NodeId, const char*, backend::Entry*) override {
    return -ENOSYS;
  }
  void Forget(backend::NodeId, uint64_t) override {}
  int GetAttr(backend::NodeId, struct stat*) override { return -ENOSYS; }
  int SetAttr(backend::NodeId, const backend::SetAttrRequest&,
              struct stat*) override {
    return -ENOSYS;
  }
  int ReadLink(backend::NodeId, std::string*) override { return -ENOSYS; }
  int MkNod(const backend::Caller&, backend::NodeId, const char*, mode_t, dev_t,
            backend::Entry*) override {
    return -ENOSYS;
  }
  int MkDir(const backend::Caller&, backend::NodeId, const char*, mode_t,
            backend::Entry*) override {
    return -ENOSYS;
  }
  int SymLink(const backend::Caller&, const char*, backend::NodeId, const char*,
              backend::Entry*) override {
    return -ENOSYS;
  }
  int Link(backend::NodeId, backend::NodeId, const char*,
           backend::Entry*) override {
    return -ENOSYS;
  }
  int Unlink(backend::NodeId, const char*) override { return -ENOSYS; }
  int RmDir(backend::NodeId, const char*) override { return -ENOSYS; }
  int Rename(backend::NodeId, const char*, backend::NodeId, const char*,
             unsigned) override {
    return -ENOSYS;
  }
  int StatFs(backend::NodeId, struct statvfs*) override { return -ENOSYS; }
  int SetXattr(backend::NodeId, const char*, const void*, size_t,
               int) override {
    return -ENOSYS;
  }
  int GetXattr(backend::NodeId, const char*, void*, size_t) override {
    return -ENOSYS;
  }
  int ListXattr(backend::NodeId, char*, size_t) override { return -ENOSYS; }
  int RemoveXattr(backend::NodeId, const char*) override { return -ENOSYS; }
  int Open(backend::NodeId, int, backend::File**) override { return -ENOSYS; }
  int Create(const backend::Caller&, backend::NodeId, const char*, mode_t, int,
             backend::Entry*, backend::File**) override {
    return -ENOSYS;
  }
  int Flush(backend::File*) override { return -ENOSYS; }
  void Release(backend::File* file) override;
  void SubmitIo(std::span<const backend::FileIoRequest> batch) override;
  int64_t RunIo(const backend::FileIoRequest&, backend::IoPath*) override {
    return -ENOSYS;
  }
  int Fsync(backend::File*, bool) override { return -ENOSYS; }
  int Fallocate(backend::File*, int, off_t, off_t) override { return -ENOSYS; }
  ssize_t CopyFileRange(backend::File*, off_t, backend::File*, off_t, size_t,
                        unsigned) override {
    return -ENOSYS;
  }
  off_t Lseek(backend::File*, off_t, int) override { return -ENOSYS; }
  bool KeepCache(backend::File*) override { return true; }
  // A handle's node is 100 + its index in opens().
  backend::NodeId NodeOf(backend::File* file) override;
  int OpenNode(backend::NodeId node, int flags, backend::File** out) override;
  int OpenDir(backend::NodeId, backend::Dir**) override { return -ENOSYS; }
  int ReadDir(backend::Dir*, off_t,
              const std::function<bool(const backend::DirEntry&)>&) override {
    return -ENOSYS;
  }
  void ReleaseDir(backend::Dir*) override {}
  int FsyncDir(backend::Dir*, bool) override { return -ENOSYS; }

 private:
  // Fake handles are never dereferenced: distinct addresses inside this
  // object's storage are enough.
  backend::File* HandleFor(size_t index);

  fgds::Mutex mu_;
  fgds::CondVar changed_;
  std::vector<backend::FileIoRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> completed_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> batch_sizes_ ABSL_GUARDED_BY(mu_);
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;  // SubmitIo calls held now
  uint64_t releases_given_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t held_left_ ABSL_GUARDED_BY(mu_) = 0;  // held calls that returned
  bool inline_ ABSL_GUARDED_BY(mu_) = false;
  int64_t inline_result_ ABSL_GUARDED_BY(mu_) = 0;
  backend::IoPath inline_path_ ABSL_GUARDED_BY(mu_) = backend::IoPath::kNone;
  int open_error_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Opened> opens_ ABSL_GUARDED_BY(mu_);
  std::vector<int> releases_ ABSL_GUARDED_BY(mu_);
  char handles_[4096] = {};
};

class ClientRing {
 public:
  // A ring of `entries` (rounded up as fgds_ring_get_layout does).
  explicit ClientRing(uint32_t entries);
  ~ClientRing();
  ClientRing(const ClientRing&) = delete;
  ClientRing& operator=(const ClientRing&) = delete;

  int memfd() const { return memfd_; }
  int submit_efd() const { return submit_efd_; }
  int complete_efd() const { return complete_efd_; }
  const fgds_ring_layout& layout() const { return layout_; }
  fgds_ring_header* header() const { return header_; }

  // Writes `sqes` into the SQ and publishes them with one release store of
  // sq_tail, then kicks the worker if it sleeps. REQUIRES: they fit.
  void Submit(std::span<const fgds_sqe> sqes);
  // Writes the submit eventfd if the worker announced it sleeps (the
  // library's KickIfSleeping); true if it did.
  bool Kick();
  // Waits, with the CQ_WAITING handshake of fgds_ior_wait, until at least
  // `count` completions are unreaped; false after kGuard.
  bool WaitForCqes(uint32_t count);
  // Takes every unreaped completion (release store of cq_head).
  std::vector<fgds_cqe> Reap();
  uint32_t unreaped() const;
  // Waits until the worker sleeps with NEED_WAKEUP set; false after kGuard.
  bool WaitForNeedWakeup() const;
  // Whether the completion eventfd was written since the last call (reads
  // it, so it is false again afterwards).
  bool TakeCompletionSignal();
  // Waits until the completion eventfd is written, and reads it; false
  // after kGuard.
  bool WaitForCompletionSignal();

  uint32_t sq_head() const;
  uint32_t sq_flags() const;
  uint32_t cq_tail() const;
  void set_cq_flags(uint32_t flags);
  // A broken client: writes any value into cq_head or sq_tail.
  void set_cq_head(uint32_t value);
  void set_sq_tail(uint32_t value);

 private:
  fgds_ring_layout layout_ = {};
  int memfd_ = -1;
  int submit_efd_ = -1;
  int complete_efd_ = -1;
  fgds_ring_header* header_ = nullptr;
  fgds_sqe* sqes_ = nullptr;
  fgds_cqe* cqes_ = nullptr;
};

// SQE builders, as fgds_prep_io / fgds_prep_fsync fill them.
fgds_sqe ReadSqe(uint32_t fd_id, uint32_t iov_id, uint64_t iov_offset,
                 uint64_t file_offset, uint64_t len, uint64_t userdata);
fgds_sqe WriteSqe(uint32_t fd_id, uint32_t iov_id, uint64_t iov_offset,
                  uint64_t file_offset, uint64_t len, uint64_t userdata);
fgds_sqe FsyncSqe(uint32_t fd_id, uint64_t userdata);

// A memfd of `size` bytes, every page allocated, with `seals` added (0:
// none), as the client library makes iovs; -1 on failure.
int MakeMemfd(uint64_t size, int seals);

// Descriptors this process has open (to check that nothing leaks).
int OpenFdCount();

// Whether a thread of process `pid` is inside read(2) on an eventfd (from
// /proc/<pid>/task/*/syscall): the daemon's side of a race a hostile
// client tries to win.
bool SomeThreadReadsAnEventfd(pid_t pid);

// Uses up every descriptor this process may open (lowering the soft
// RLIMIT_NOFILE first, so that takes only a few), until destroyed: the
// daemon's side of a test then runs out, as a daemon at its limit does.
class DescriptorExhaustion {
 public:
  DescriptorExhaustion();
  ~DescriptorExhaustion();
  DescriptorExhaustion(const DescriptorExhaustion&) = delete;
  DescriptorExhaustion& operator=(const DescriptorExhaustion&) = delete;

  // Gives `count` descriptors back (for a test's own next step).
  void Release(int count);

 private:
  rlimit saved_ = {};
  std::vector<int> fillers_;
};

}  // namespace fgds::session::testing

#endif  // FGDS_FUSEFS_SESSION_SESSION_TESTING_H_
