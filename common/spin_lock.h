// File: common/spin_lock.h
//
// SpinLock: for critical sections of a few stores that many threads enter
// at a high rate (usrbio completions: every engine worker posts into the
// same ring). A contended fgds::Mutex puts waiters to sleep in the kernel,
// which costs microseconds for a section that takes nanoseconds; a waiter
// here spins, and yields the CPU only after a while (a holder preempted on
// an overloaded machine must get to run). Atomics only, so ThreadSanitizer
// sees the ordering; the clang thread-safety annotations work as on Mutex.
//
// Thread safety: this is a synchronization primitive. Never hold it across
// anything that can block.
#ifndef FGDS_COMMON_SPIN_LOCK_H_
#define FGDS_COMMON_SPIN_LOCK_H_

#include <sched.h>

#include <atomic>

#include "absl/base/thread_annotations.h"

namespace fgds {

class ABSL_LOCKABLE SpinLock {
 public:
  SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    while (held_.exchange(true, std::memory_order_acquire)) {
      // Wait on a plain load (no cache-line writes) until it looks free.
      for (int spins = 0; held_.load(std::memory_order_relaxed);) {
        if (++spins < kSpinsBeforeYield) {
          Pause();
        } else {
          sched_yield();
          spins = 0;
        }
      }
    }
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    held_.store(false, std::memory_order_release);
  }

 private:
  static constexpr int kSpinsBeforeYield = 128;
  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<bool> held_{false};
};

class ABSL_SCOPED_LOCKABLE SpinLockHolder {
 public:
  explicit SpinLockHolder(SpinLock* lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->Lock();
  }
  ~SpinLockHolder() ABSL_UNLOCK_FUNCTION() { lock_->Unlock(); }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;

 private:
  SpinLock* const lock_;
};

}  // namespace fgds

#endif  // FGDS_COMMON_SPIN_LOCK_H_
