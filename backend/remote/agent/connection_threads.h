// File: backend/remote/agent/connection_threads.h
//
// ConnectionThreads<Handle>: an agent server's connection threads, one per
// daemon, each with the handle that Stop shuts down to end it (a
// FrameStream for TCP, an RdmaConnection for RDMA: anything with a
// thread-safe Shutdown()). Both transports' servers admit, reap and stop
// their connections through this, so that the bound and the stop are
// written once.
//
// Example (a server's accept thread, then its Stop):
//   switch (threads_.Start(max, [&](auto* slot) { Serve(slot, fd); })) ...
//   // in Serve: threads_.Attach(slot, &stream); ... threads_.Detach(slot);
//   if (!threads_.BeginStop()) return;  // Stop: once
//   ... end the accept thread ...
//   threads_.JoinAll();
//
// Thread safety: every method may be called from any thread; Attach and
// Detach only from the slot's own thread.
#ifndef FGDS_BACKEND_REMOTE_AGENT_CONNECTION_THREADS_H_
#define FGDS_BACKEND_REMOTE_AGENT_CONNECTION_THREADS_H_

#include <cstddef>
#include <functional>
#include <list>
#include <system_error>
#include <thread>
#include <utility>

#include "common/mutex.h"

namespace fgds::remote {

template <typename Handle>
class ConnectionThreads {
 public:
  class Slot {
    friend class ConnectionThreads;
    std::thread thread;
    Handle* handle = nullptr;  // while attached
    bool finished = false;     // serve returned: the thread may be joined
  };

  enum class Admission { kStarted, kStopping, kFull, kNoThread };

  ConnectionThreads() = default;
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;
  ~ConnectionThreads() { JoinAll(); }

  // Runs serve(slot) on a new thread unless stopping or `max` threads are
  // there; reaps the threads that finished first. Anything but kStarted
  // leaves the connection to the caller.
  Admission Start(size_t max, std::function<void(Slot*)> serve) {
    MutexLock lock(&mu_);
    ReapFinished();
    if (stopping_) return Admission::kStopping;
    if (slots_.size() >= max) return Admission::kFull;
    slots_.emplace_back();
    Slot* slot = &slots_.back();
    try {
      slot->thread = std::thread([this, slot, serve = std::move(serve)] {
        serve(slot);
        MutexLock done(&mu_);
        slot->handle = nullptr;
        slot->finished = true;
      });
    } catch (const std::system_error&) {
      slots_.pop_back();
      return Admission::kNoThread;
    }
    return Admission::kStarted;
  }

  // The slot's connection is now `handle`: Stop shuts it down. Shut down
  // at once if Stop has begun.
  void Attach(Slot* slot, Handle* handle) {
    bool stopping;
    {
      MutexLock lock(&mu_);
      slot->handle = handle;
      stopping = stopping_;
    }
    if (stopping) handle->Shutdown();
  }
  // Before the handle goes away.
  void Detach(Slot* slot) {
    MutexLock lock(&mu_);
    slot->handle = nullptr;
  }

  // No thread starts from now on, and every attached connection is shut
  // down (its thread then returns). False if Stop had begun already.
  bool BeginStop() {
    MutexLock lock(&mu_);
    if (stopping_) return false;
    stopping_ = true;
    for (Slot& slot : slots_) {
      if (slot.handle != nullptr) slot.handle->Shutdown();
    }
    return true;
  }

  // Waits for every thread (after BeginStop, none starts any more, so the
  // list only shrinks).
  void JoinAll() {
    std::list<Slot> left;
    {
      MutexLock lock(&mu_);
      left.splice(left.begin(), slots_);
    }
    for (Slot& slot : left) {
      if (slot.thread.joinable()) slot.thread.join();
    }
  }

 private:
  void ReapFinished() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (it->finished) {
        it->thread.join();  // it has returned from serve: a short wait
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }

  Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_CONNECTION_THREADS_H_
