// File: common/io/uring_os.h
//
// UringOs: the operating-system calls a UringWorker makes (uring_worker.h),
// behind one narrow interface, as leveldb's Env: ring setup and teardown,
// submission, the wait for a completion, and the eventfd that wakes an idle
// worker. Default() is the real thing; tests pass one that fails on purpose
// (fault_uring_os.h) through IoEngineOptions::uring_os, and check that every
// request still completes exactly once and no worker spins or hangs.
//
// What is not here is plain memory (but for a hook before each allocation
// of the engine, for tests): preparing entries and reading
// completions are loads and stores on the rings liburing mapped, and the
// kernel posts completions there whatever these calls return.
//
// Results as liburing's: a count or 0, else -errno; errno is not the
// channel. Thread safety: every worker calls its UringOs from its own thread,
// all at once, so implementations must be thread-safe.
#ifndef FGDS_COMMON_IO_URING_OS_H_
#define FGDS_COMMON_IO_URING_OS_H_

#include <liburing.h>

namespace fgds::io {

class UringOs {
 public:
  virtual ~UringOs() = default;

  // io_uring_queue_init_params: 0 or -errno.
  virtual int QueueInit(unsigned entries, io_uring* ring,
                        io_uring_params* params) = 0;
  // io_uring_queue_exit.
  virtual void QueueExit(io_uring* ring) = 0;
  // io_uring_submit: hands the prepared entries to the kernel; how many it
  // took, or -errno when it took none. Entries it did not take stay in the
  // submission queue (the worker takes them back: uring_worker.cc).
  virtual int Submit(io_uring* ring) = 0;
  // io_uring_wait_cqe: 0 once a completion is ready (*cqe), else -errno.
  virtual int WaitCqe(io_uring* ring, io_uring_cqe** cqe) = 0;
  // eventfd(2): the descriptor, or -errno.
  virtual int EventFd(unsigned initval, int flags) = 0;
  // Called by UringEngine::Submit before each allocation it makes for a
  // batch (uring_engine.h). The real one does nothing; the fault layer
  // throws std::bad_alloc here, as a failing operator new would, so tests
  // can fail any one allocation without touching the global allocator.
  virtual void BeforeAllocation() {}

  // The real calls. Never null; lives as long as the process.
  static UringOs* Default();
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_URING_OS_H_
