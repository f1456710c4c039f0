#include "usrbio/direct/dispatcher.h"

namespace fgds::direct {

void Dispatcher::Push(std::shared_ptr<Request> request) {
  fgds::MutexLock lock(&mu_);
  queue_.push_back(std::move(request));
  changed_.Signal();
}

void Dispatcher::TakeLocked(ChunkTask* task) {
  Request& front = *queue_.front();
  task->index = front.next_chunk++;
  if (front.next_chunk == front.plan().chunk_count()) {
    task->request = std::move(queue_.front());
    queue_.pop_front();
  } else {
    task->request = queue_.front();
  }
}

bool Dispatcher::Take(ChunkTask* task) {
  fgds::MutexLock lock(&mu_);
  ++idle_;
  // Push and Shutdown signal under the mutex, so no wake-up is lost.
  while (queue_.empty() && !shutdown_) changed_.Wait(&mu_);
  --idle_;
  if (queue_.empty()) return false;
  TakeLocked(task);
  return true;
}

bool Dispatcher::TryTake(ChunkTask* task) {
  fgds::MutexLock lock(&mu_);
  if (queue_.empty() || idle_ > 0) return false;
  TakeLocked(task);
  return true;
}

void Dispatcher::Shutdown() {
  fgds::MutexLock lock(&mu_);
  shutdown_ = true;
  changed_.SignalAll();
}

}  // namespace fgds::direct
