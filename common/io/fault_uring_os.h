// File: common/io/fault_uring_os.h
//
// FaultUringOs: a UringOs (uring_os.h) for tests, as leveldb's fault
// injection Env. Every call goes to the real one until a fault is set:
// then chosen calls fail with a chosen errno, once, several times or from
// now on, after some that work. A failed Submit or WaitCqe never reaches the
// kernel (as an io_uring_enter that took nothing): prepared entries stay in
// the submission queue, and I/O the kernel already holds goes on and posts
// its completions. LimitSubmit makes the kernel take only part of what is
// prepared, as a real short submission.
//
// Only submissions with something prepared count as calls of Submit (a
// worker also calls it with nothing to submit, which liburing answers
// without the kernel).
//
// Thread safety: thread-safe; a test may change faults while workers run.
#ifndef FGDS_COMMON_IO_FAULT_URING_OS_H_
#define FGDS_COMMON_IO_FAULT_URING_OS_H_

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "common/io/uring_os.h"
#include "common/mutex.h"

namespace fgds::io {

class FaultUringOs : public UringOs {
 public:
  // A fault: after `skip` calls that work, `count` calls (-1: all) fail
  // with `error` (-errno).
  struct Fault {
    int error = 0;
    int count = 0;
    int skip = 0;
  };

  void FailQueueInit(Fault fault) { Set(&queue_init_, fault); }
  void FailEventFd(Fault fault) { Set(&eventfd_, fault); }
  void FailSubmit(Fault fault) { Set(&submit_, fault); }
  void FailWait(Fault fault) { Set(&wait_, fault); }
  // BeforeAllocation throws std::bad_alloc (`error` only needs to be
  // nonzero: -ENOMEM).
  void FailAllocation(Fault fault) { Set(&alloc_, fault); }
  // Submissions that work take at most `entries` (0: no limit).
  void LimitSubmit(unsigned entries) { submit_limit_.store(entries); }
  // Clears every fault and limit.
  void Heal();

  // Calls made and calls failed, by kind.
  int submit_calls() const { return submit_calls_.load(); }
  int wait_calls() const { return wait_calls_.load(); }
  int submit_failures() const { return submit_failures_.load(); }
  int wait_failures() const { return wait_failures_.load(); }
  int allocation_calls() const { return alloc_calls_.load(); }
  int allocation_failures() const { return alloc_failures_.load(); }
  // Rings set up and not yet torn down.
  int rings() const { return rings_.load(); }

  int QueueInit(unsigned entries, io_uring* ring,
                io_uring_params* params) override;
  void QueueExit(io_uring* ring) override;
  int Submit(io_uring* ring) override;
  int WaitCqe(io_uring* ring, io_uring_cqe** cqe) override;
  int EventFd(unsigned initval, int flags) override;
  void BeforeAllocation() override;

 private:
  void Set(Fault* fault, Fault value);
  // The error `fault` injects into this call, or 0.
  int Fire(Fault* fault);

  fgds::Mutex mu_;
  Fault queue_init_ ABSL_GUARDED_BY(mu_);
  Fault eventfd_ ABSL_GUARDED_BY(mu_);
  Fault submit_ ABSL_GUARDED_BY(mu_);
  Fault wait_ ABSL_GUARDED_BY(mu_);
  Fault alloc_ ABSL_GUARDED_BY(mu_);
  std::atomic<unsigned> submit_limit_{0};
  std::atomic<int> submit_calls_{0};
  std::atomic<int> wait_calls_{0};
  std::atomic<int> submit_failures_{0};
  std::atomic<int> wait_failures_{0};
  std::atomic<int> alloc_calls_{0};
  std::atomic<int> alloc_failures_{0};
  std::atomic<int> rings_{0};
};

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_FAULT_URING_OS_H_
