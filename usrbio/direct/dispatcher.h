// File: usrbio/direct/dispatcher.h
//
// The queue between callers and workers: requests go in whole, workers
// take them out one chunk at a time, in submission order. Chunks of one
// large request spread over all workers, so one caller gets the whole
// engine; several callers' requests are served first come, first served.
#ifndef FGDS_USRBIO_DIRECT_DISPATCHER_H_
#define FGDS_USRBIO_DIRECT_DISPATCHER_H_

#include <cstdint>
#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "usrbio/direct/request.h"

namespace fgds::direct {

struct ChunkTask {
  std::shared_ptr<Request> request;
  uint64_t index = 0;
};

// Thread-safe.
class Dispatcher {
 public:
  // Push queues every chunk of `request`. REQUIRES: it has at least one.
  void Push(std::shared_ptr<Request> request);

  // Take blocks for the next chunk; false once Shutdown was called and
  // the queue is empty.
  bool Take(ChunkTask* task);

  // TryTake takes a chunk only if one is queued and no worker is idle in
  // Take: a worker that already has chunks in flight leaves new work to
  // idle ones, so that page-cache copies (done by the worker's own thread)
  // spread over all cores.
  bool TryTake(ChunkTask* task);

  void Shutdown();

 private:
  void TakeLocked(ChunkTask* task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  fgds::Mutex mu_;
  fgds::CondVar changed_;  // queue_ grew or shutdown_ was set
  std::deque<std::shared_ptr<Request>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_DISPATCHER_H_
