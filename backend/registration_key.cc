#include "backend/registration_key.h"

#include <array>

#include "common/mutex.h"

namespace fgds::backend {
namespace {

std::atomic<uint64_t> g_next_key{1};

// The last kRetiredLogSize retired keys; entry i % size is the i-th.
struct RetiredLog {
  fgds::Mutex mu;
  std::array<uint64_t, kRetiredLogSize> keys ABSL_GUARDED_BY(mu) = {};
  // Written under mu; read without it as the cheap "anything new?" check.
  std::atomic<uint64_t> count{0};
};

RetiredLog& Log() {
  // Never destroyed: keys of static objects may die after it would.
  static RetiredLog* log = new RetiredLog;
  return *log;
}

}  // namespace

RegistrationKey::RegistrationKey()
    : value_(g_next_key.fetch_add(1, std::memory_order_relaxed)) {}

RegistrationKey::~RegistrationKey() {
  if (!registered_.load(std::memory_order_seq_cst)) return;
  RetiredLog& log = Log();
  fgds::MutexLock lock(&log.mu);
  const uint64_t n = log.count.load(std::memory_order_relaxed);
  log.keys[n % kRetiredLogSize] = value_;
  log.count.store(n + 1, std::memory_order_release);
}

uint64_t RetiredCount() { return Log().count.load(std::memory_order_acquire); }

bool RetiredSince(uint64_t from, uint64_t* to, std::span<uint64_t> keys,
                  size_t* count) {
  RetiredLog& log = Log();
  fgds::MutexLock lock(&log.mu);
  const uint64_t n = log.count.load(std::memory_order_relaxed);
  *to = n;
  *count = 0;
  if (n - from > kRetiredLogSize || n - from > keys.size()) return false;
  for (uint64_t i = from; i < n; ++i) {
    keys[(*count)++] = log.keys[i % kRetiredLogSize];
  }
  return true;
}

}  // namespace fgds::backend
