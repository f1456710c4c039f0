// File: fusefs/session/client_eventfd.h
//
// The daemon's calls on a client's eventfds, none of which may block.
//
// A client shares the file description of every eventfd it sends us, so
// O_NONBLOCK is its to change at any time (F_SETFL after our own fcntl),
// and it can race each of our calls. The rules:
//
// - Submit eventfd: never read. A ring worker watches it edge-triggered
//   (EPOLLET), which reports every write the client makes, whatever the
//   counter holds, so there is nothing to drain; its flags and semaphore
//   mode (EFD_SEMAPHORE) cannot matter.
// - Completion eventfd: the daemon adds 1. eventfd's write has no per-call
//   non-blocking flag on the kernels we support: pwritev2(RWF_NOWAIT) is
//   refused (EOPNOTSUPP: eventfd has .write, not .write_iter; tried on
//   6.18, a conversion was only proposed on the list). It blocks only while the
//   counter is at 2^64-2, which only the client's own writes can reach, so
//   each write runs under an EventfdWriteWatch: a watchdog thread that sees
//   a write blocked longer than its bound reads the counter back to zero
//   with preadv2(RWF_NOWAIT) (eventfd's read honours IOCB_NOWAIT since it
//   became read_iter in 5.12, whatever O_NONBLOCK says), which wakes the
//   writer; the ring then never signals that client again.
// - Semaphore-mode eventfds are refused at registration where the kernel
//   says (fdinfo's "eventfd-semaphore", 6.3 and later): nothing needs them,
//   and reading one back by 1 at a time is not the reset the rescue needs.
#ifndef FGDS_FUSEFS_SESSION_CLIENT_EVENTFD_H_
#define FGDS_FUSEFS_SESSION_CLIENT_EVENTFD_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "common/spin_lock.h"

namespace fgds::session {

// Whether `fd` is an eventfd and, where the kernel reports it, not in
// semaphore mode. Returns 0, or -EINVAL.
int CheckClientEventfd(int fd);

// Reads `efd` once without blocking, whatever its O_NONBLOCK (RWF_NOWAIT);
// returns the count read, or 0 when there was none.
uint64_t ReadEventfdNoWait(int efd);

// Whether a write of 1 to `efd` would block now: its counter is at the
// maximum (/proc/self/fdinfo's eventfd-count), or the count cannot be read.
bool EventfdWriteWouldBlock(int efd);

// Adds 1 to our own eventfd (O_NONBLOCK, which nobody else can change).
void SignalOwnEventfd(int efd);

// One thread's writes of client eventfds, watched by another thread.
//
// Thread safety: Signal on the owning thread only; RescueIfStalled from
// any one other thread.
class EventfdWriteWatch {
 public:
  // Adds 1 to the client's `efd`. Returns false if the write blocked and
  // had to be rescued: the client filled its counter on purpose, and the
  // caller should not write that descriptor again.
  bool Signal(int efd);
  // Rescues a write that has been blocked since before `now_ns - bound_ns`
  // and still would block (EventfdWriteWouldBlock): a write that is only
  // slow is left to finish. The descriptor stays open meanwhile: the
  // writer holds it in use.
  void RescueIfStalled(uint64_t now_ns, uint64_t bound_ns);

 private:
  fgds::SpinLock mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;  // being written, else -1
  uint64_t since_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool rescued_ ABSL_GUARDED_BY(mu_) = false;
};

// CLOCK_MONOTONIC in nanoseconds.
uint64_t MonotonicNs();

}  // namespace fgds::session

#endif  // FGDS_FUSEFS_SESSION_CLIENT_EVENTFD_H_
