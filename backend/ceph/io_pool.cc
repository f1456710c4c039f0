#include "backend/ceph/io_pool.h"

#include <utility>

namespace fgds::backend {

IoPool::IoPool(unsigned threads) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i)
    threads_.emplace_back([this] { Loop(); });
}

IoPool::~IoPool() {
  {
    fgds::MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_.SignalAll();
  for (std::thread& t : threads_) t.join();
}

void IoPool::Submit(std::function<void()> job) {
  {
    fgds::MutexLock lock(&mu_);
    queue_.push_back(std::move(job));
  }
  work_.Signal();
}

void IoPool::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      fgds::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) work_.Wait(&mu_);
      // Drain before stopping: every queued job completes a request.
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace fgds::backend
