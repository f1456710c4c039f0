// File: backend/ceph/io_pool.h
//
// IoPool: a fixed number of threads running queued jobs, for calls that
// block (libcephfs reads and writes wait on the network). The thread count
// is fixed at construction, so load never starts more threads; the queue
// holds what waits. The destructor runs every job already queued, then
// joins.
//
// Thread safety: Submit may be called from any thread, including a job.
#ifndef FGDS_BACKEND_CEPH_IO_POOL_H_
#define FGDS_BACKEND_CEPH_IO_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::backend {

class IoPool {
 public:
  explicit IoPool(unsigned threads);
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  void Submit(std::function<void()> job);
  unsigned threads() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void Loop();

  // fgds::Mutex, not absl::Mutex: Debian's abseil is not built with
  // ThreadSanitizer's annotations, so TSan cannot see absl::Mutex order.
  fgds::Mutex mu_;
  fgds::CondVar work_;  // a job queued, or stopping
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_IO_POOL_H_
