#include "fusefs/op_stats.h"

#include <bit>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fgds::fusefs {

namespace {
constexpr const char* kOpNames[] = {
    "lookup",          "forget",     "getattr",     "setattr", "readlink",
    "mknod",           "mkdir",      "unlink",      "rmdir",   "symlink",
    "rename",          "link",       "open",        "read",    "write",
    "flush",           "release",    "fsync",       "opendir", "readdir",
    "readdirplus",     "releasedir", "fsyncdir",    "statfs",  "setxattr",
    "getxattr",        "listxattr",  "removexattr", "create",  "fallocate",
    "copy_file_range", "lseek",
};
static_assert(std::size(kOpNames) == static_cast<size_t>(Op::kCount),
              "one name per Op");
}  // namespace

const char* OpName(Op op) {
  int i = static_cast<int>(op);
  return i >= 0 && i < static_cast<int>(Op::kCount) ? kOpNames[i] : "?";
}

OpStats::OpStats() : start_(Clock::now()) {}

void OpStats::Record(Op op, Clock::duration latency, uint64_t bytes,
                     int error) {
  Counters& c = ops_[static_cast<int>(op)];
  auto ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(latency).count());
  c.count.fetch_add(1, std::memory_order_relaxed);
  if (error != 0) c.errors.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.total_ns.fetch_add(ns, std::memory_order_relaxed);
  uint64_t prev = c.max_ns.load(std::memory_order_relaxed);
  while (ns > prev &&
         !c.max_ns.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
  }
  // Bucket b holds latencies in [2^(b-1), 2^b) ns; bucket 0 holds 0.
  int bucket = std::min(kBuckets - 1, static_cast<int>(std::bit_width(ns)));
  c.histogram[bucket].fetch_add(1, std::memory_order_relaxed);
}

uint64_t OpStats::count(Op op) const {
  return at(op).count.load(std::memory_order_relaxed);
}
uint64_t OpStats::errors(Op op) const {
  return at(op).errors.load(std::memory_order_relaxed);
}
uint64_t OpStats::bytes(Op op) const {
  return at(op).bytes.load(std::memory_order_relaxed);
}

uint64_t OpStats::LatencyQuantileNs(Op op, double q) const {
  const Counters& c = at(op);
  uint64_t total = 0;
  std::array<uint64_t, kBuckets> snapshot;
  for (int b = 0; b < kBuckets; ++b) {
    snapshot[b] = c.histogram[b].load(std::memory_order_relaxed);
    total += snapshot[b];
  }
  if (total == 0) return 0;
  auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += snapshot[b];
    if (seen >= rank) return b == 0 ? 0 : (uint64_t{1} << b);
  }
  return uint64_t{1} << (kBuckets - 1);
}

std::string OpStats::Render(const std::string& header) const {
  double uptime = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string out = absl::StrFormat("%s uptime_s=%.1f\n", header, uptime);
  absl::StrAppendFormat(&out, "%-16s %12s %8s %16s %10s %10s %10s %10s\n", "op",
                        "count", "errors", "bytes", "avg_us", "p50_us",
                        "p99_us", "max_us");
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i) {
    auto op = static_cast<Op>(i);
    const Counters& c = at(op);
    uint64_t n = c.count.load(std::memory_order_relaxed);
    double avg_us =
        n == 0
            ? 0.0
            : static_cast<double>(c.total_ns.load(std::memory_order_relaxed)) /
                  static_cast<double>(n) / 1000.0;
    absl::StrAppendFormat(
        &out, "%-16s %12u %8u %16u %10.1f %10.1f %10.1f %10.1f\n", OpName(op),
        n, c.errors.load(std::memory_order_relaxed),
        c.bytes.load(std::memory_order_relaxed), avg_us,
        static_cast<double>(LatencyQuantileNs(op, 0.50)) / 1000.0,
        static_cast<double>(LatencyQuantileNs(op, 0.99)) / 1000.0,
        static_cast<double>(c.max_ns.load(std::memory_order_relaxed)) / 1000.0);
  }
  return out;
}

}  // namespace fgds::fusefs
