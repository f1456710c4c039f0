#include "common/io/fault_uring_os.h"

#include <new>

namespace fgds::io {

void FaultUringOs::Set(Fault* fault, Fault value) {
  MutexLock lock(&mu_);
  *fault = value;
}

void FaultUringOs::Heal() {
  {
    MutexLock lock(&mu_);
    queue_init_ = eventfd_ = submit_ = wait_ = alloc_ = Fault();
  }
  submit_limit_.store(0);
}

int FaultUringOs::Fire(Fault* fault) {
  MutexLock lock(&mu_);
  if (fault->count == 0) return 0;
  if (fault->skip > 0) {
    --fault->skip;
    return 0;
  }
  if (fault->count > 0) --fault->count;
  return fault->error;
}

int FaultUringOs::QueueInit(unsigned entries, io_uring* ring,
                            io_uring_params* params) {
  if (const int error = Fire(&queue_init_); error != 0) return error;
  const int ret = UringOs::Default()->QueueInit(entries, ring, params);
  if (ret == 0) rings_.fetch_add(1);
  return ret;
}

void FaultUringOs::QueueExit(io_uring* ring) {
  UringOs::Default()->QueueExit(ring);
  rings_.fetch_sub(1);
}

int FaultUringOs::Submit(io_uring* ring) {
  const unsigned ready = io_uring_sq_ready(ring);
  if (ready == 0) return UringOs::Default()->Submit(ring);
  submit_calls_.fetch_add(1);
  if (const int error = Fire(&submit_); error != 0) {
    submit_failures_.fetch_add(1);
    return error;
  }
  const unsigned limit = submit_limit_.load();
  if (limit == 0 || ready <= limit) return UringOs::Default()->Submit(ring);
  // liburing hands the kernel the entries up to sqe_tail: hide the rest
  // for this call, so that the next one submits them.
  const unsigned hidden = ready - limit;
  ring->sq.sqe_tail -= hidden;
  const int ret = UringOs::Default()->Submit(ring);
  ring->sq.sqe_tail += hidden;
  return ret;
}

int FaultUringOs::WaitCqe(io_uring* ring, io_uring_cqe** cqe) {
  wait_calls_.fetch_add(1);
  if (const int error = Fire(&wait_); error != 0) {
    wait_failures_.fetch_add(1);
    return error;
  }
  return UringOs::Default()->WaitCqe(ring, cqe);
}

int FaultUringOs::EventFd(unsigned initval, int flags) {
  if (const int error = Fire(&eventfd_); error != 0) return error;
  return UringOs::Default()->EventFd(initval, flags);
}

}  // namespace fgds::io

namespace fgds::io {

void FaultUringOs::BeforeAllocation() {
  alloc_calls_.fetch_add(1);
  if (Fire(&alloc_) != 0) {
    alloc_failures_.fetch_add(1);
    throw std::bad_alloc();
  }
}

}  // namespace fgds::io
