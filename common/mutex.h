// File: common/mutex.h
//
// Mutex, MutexLock and CondVar: the names and annotations of absl::Mutex
// over std::mutex. Why not absl::Mutex itself: Debian's abseil is a prebuilt
// library, so under ThreadSanitizer its lock operations are invisible and
// every guarded access looks like a race; pthread mutexes are intercepted
// by TSan, so with these the TSan build checks our locking for real. The
// clang thread-safety annotations (ABSL_GUARDED_BY, ...) work the same.
//
// Thread safety: these are the synchronization primitives.
#ifndef FGDS_COMMON_MUTEX_H_
#define FGDS_COMMON_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace fgds {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Documents (to the analysis) that the caller holds the lock.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Atomically releases *mu and waits; *mu is held again on return.
  // Spurious wakeups happen: wait in a loop on the condition.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held; the caller's MutexLock unlocks it
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace fgds

#endif  // FGDS_COMMON_MUTEX_H_
