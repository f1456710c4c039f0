// File: fusefs/op_stats.h
//
// OpStats counts, per FUSE operation, calls, errors, bytes and latency, and
// renders them as the text of /.fgds/stats. Recording is lock-free (relaxed
// atomics: each counter is independent, and a snapshot need not be atomic
// across counters).
//
// Latency percentiles come from a log2 histogram: a percentile is reported
// as the upper bound of its bucket, so it is exact within a factor of two.
#ifndef FGDS_FUSEFS_OP_STATS_H_
#define FGDS_FUSEFS_OP_STATS_H_

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

namespace fgds::fusefs {

// The FUSE operations counted; OpName (op_stats.cc) holds their names in
// this order.
enum class Op : int {
  kLookup,
  kForget,
  kGetattr,
  kSetattr,
  kReadlink,
  kMknod,
  kMkdir,
  kUnlink,
  kRmdir,
  kSymlink,
  kRename,
  kLink,
  kOpen,
  kRead,
  kWrite,
  kFlush,
  kRelease,
  kFsync,
  kOpendir,
  kReaddir,
  kReaddirplus,
  kReleasedir,
  kFsyncdir,
  kStatfs,
  kSetxattr,
  kGetxattr,
  kListxattr,
  kRemovexattr,
  kCreate,
  kFallocate,
  kCopyFileRange,
  kLseek,
  kCount
};

const char* OpName(Op op);

class OpStats {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kBuckets = 40;  // 2^39 ns ~ 9 minutes

  OpStats();

  // Records one finished operation. `error` is 0 or an errno.
  void Record(Op op, Clock::duration latency, uint64_t bytes, int error);

  // Snapshot as a human-readable table. `header` comes first (one line).
  std::string Render(const std::string& header) const;

  uint64_t count(Op op) const;
  uint64_t errors(Op op) const;
  uint64_t bytes(Op op) const;
  // Upper bound (ns) of the bucket holding the q-quantile (0 < q <= 1).
  uint64_t LatencyQuantileNs(Op op, double q) const;

 private:
  struct Counters {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> total_ns{0};
    std::atomic<uint64_t> max_ns{0};
    std::array<std::atomic<uint64_t>, kBuckets> histogram{};
  };
  const Counters& at(Op op) const { return ops_[static_cast<int>(op)]; }

  Clock::time_point start_;
  std::array<Counters, static_cast<int>(Op::kCount)> ops_;
};

// OpTimer records one operation when it goes out of scope. Destroyed by
// an exception leaving the handler, it records an error: the operation
// table's guard (ops_table.cc) then fails the request with an errno.
class OpTimer {
 public:
  OpTimer(OpStats& stats, Op op)
      : stats_(stats),
        op_(op),
        start_(OpStats::Clock::now()),
        exceptions_at_start_(std::uncaught_exceptions()) {}
  ~OpTimer() {
    // More exceptions in flight than when the handler began: this one is
    // unwinding through it. (Its errno is the guard's to choose; any
    // nonzero value counts the error.)
    if (std::uncaught_exceptions() > exceptions_at_start_) {
      error_ = kUnwound;
      bytes_ = 0;
    }
    stats_.Record(op_, OpStats::Clock::now() - start_, bytes_, error_);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // A negative result is an error (-errno); a positive one counts as bytes
  // only where add_bytes says so.
  void set_result(int64_t result, bool add_bytes = false) {
    if (result < 0) {
      error_ = static_cast<int>(-result);
    } else if (add_bytes) {
      bytes_ = static_cast<uint64_t>(result);
    }
  }
  OpStats::Clock::time_point start() const { return start_; }

  // What an operation that failed by an exception records.
  static constexpr int kUnwound = EIO;

 private:
  OpStats& stats_;
  const Op op_;
  const OpStats::Clock::time_point start_;
  const int exceptions_at_start_;
  uint64_t bytes_ = 0;
  int error_ = 0;
};

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_OP_STATS_H_
