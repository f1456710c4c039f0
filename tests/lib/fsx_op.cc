#include "tests/lib/fsx_op.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace fgds::testing::fsx {
namespace {

using ull = unsigned long long;  // for printf's %llx

// Relative op frequencies (out of their sum). Reads and writes dominate as
// in fsx; whole-file checks are rare because they cost a full read.
struct OpWeight {
  FsxOp op;
  uint64_t weight;
};
constexpr OpWeight kOpWeights[] = {
    {FsxOp::kRead, 200},     {FsxOp::kWrite, 200},    {FsxOp::kAppend, 70},
    {FsxOp::kTruncate, 60},  {FsxOp::kMapRead, 80},   {FsxOp::kMapWrite, 80},
    {FsxOp::kFsync, 12},     {FsxOp::kFdatasync, 12}, {FsxOp::kReopen, 25},
    {FsxOp::kPunchHole, 40}, {FsxOp::kZeroRange, 40}, {FsxOp::kFallocate, 20},
    {FsxOp::kCopyRange, 60}, {FsxOp::kVerify, 3},
};

}  // namespace

FsxOp PickOp(Rng& rng) {
  uint64_t total = 0;
  for (const OpWeight& w : kOpWeights) total += w.weight;
  uint64_t x = rng.Uniform(total);
  for (const OpWeight& w : kOpWeights) {
    if (x < w.weight) return w.op;
    x -= w.weight;
  }
  return FsxOp::kRead;  // unreachable
}

// Page boundaries are where caches split and merge, so they get extra
// weight.
uint64_t RandOffset(Rng& rng, uint64_t limit, uint64_t page) {
  if (rng.OneIn(4)) return rng.Uniform((limit + page - 1) / page) * page;
  return rng.Uniform(limit);
}

// Tiny, sub-page, moderate or large with equal probability, so that both
// byte-granular edges and multi-page requests occur; sometimes whole pages.
uint64_t RandLen(Rng& rng, uint64_t max, uint64_t page) {
  static constexpr uint64_t kScales[] = {16, 4096, 65536, UINT64_MAX};
  uint64_t len = 1 + rng.Uniform(std::min(max, kScales[rng.Uniform(4)]));
  if (len > page && rng.OneIn(4)) len -= len % page;
  return len;
}

std::string Describe(const OpRecord& op) {
  std::string s = Format("#%llu %-10s f%d", static_cast<ull>(op.number),
                         FsxOpName(op.type), op.file);
  switch (op.type) {
    case FsxOp::kTruncate:
      s += Format(" to 0x%llx", static_cast<ull>(op.offset));
      break;
    case FsxOp::kCopyRange:
      s += Format(" [0x%llx,+0x%llx) -> f%d@0x%llx",
                  static_cast<ull>(op.offset), static_cast<ull>(op.length),
                  op.dst, static_cast<ull>(op.dst_offset));
      break;
    case FsxOp::kFsync:
    case FsxOp::kFdatasync:
    case FsxOp::kReopen:
    case FsxOp::kVerify:
      break;
    default:
      s += Format(" [0x%llx,+0x%llx)", static_cast<ull>(op.offset),
                  static_cast<ull>(op.length));
  }
  if (op.keep_size) s += " keep_size";
  if (op.done && op.size_before != op.size_after) {
    s += Format(" size 0x%llx->0x%llx", static_cast<ull>(op.size_before),
                static_cast<ull>(op.size_after));
  }
  if (op.emulated) s += " (emulated)";
  if (!op.done) s += " (in progress)";
  return s;
}

std::string Format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string HexBytes(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += Format("%s%02x", i ? " " : "", p[i]);
  return s;
}

}  // namespace fgds::testing::fsx

namespace fgds::testing {

const char* FsxOpName(FsxOp op) {
  switch (op) {
    case FsxOp::kRead:
      return "read";
    case FsxOp::kWrite:
      return "write";
    case FsxOp::kAppend:
      return "append";
    case FsxOp::kTruncate:
      return "truncate";
    case FsxOp::kMapRead:
      return "map_read";
    case FsxOp::kMapWrite:
      return "map_write";
    case FsxOp::kFsync:
      return "fsync";
    case FsxOp::kFdatasync:
      return "fdatasync";
    case FsxOp::kReopen:
      return "reopen";
    case FsxOp::kPunchHole:
      return "punch_hole";
    case FsxOp::kZeroRange:
      return "zero_range";
    case FsxOp::kFallocate:
      return "fallocate";
    case FsxOp::kCopyRange:
      return "copy_range";
    case FsxOp::kVerify:
      return "verify";
  }
  return "?";
}

}  // namespace fgds::testing
