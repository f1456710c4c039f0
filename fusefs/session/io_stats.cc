#include "fusefs/session/io_stats.h"

#include "absl/strings/str_format.h"

namespace fgds::session {

namespace {

const char* OpName(IoStats::Op op) {
  return op == IoStats::Op::kRead ? "read" : "write";
}

const char* MemoryName(IoStats::Memory memory) {
  switch (memory) {
    case IoStats::Memory::kHost:
      return "host";
    case IoStats::Memory::kGpuBounce:
      return "gpu-bounce";
    default:
      return "gpu-direct";
  }
}

const char* FileSideName(IoStats::FileSide side) {
  return side == IoStats::FileSide::kPageCache ? "page-cache" : "o-direct";
}

}  // namespace

size_t IoStats::Index(Kind kind) {
  return (static_cast<size_t>(kind.op) * static_cast<size_t>(Memory::kCount) +
          static_cast<size_t>(kind.memory)) *
             static_cast<size_t>(FileSide::kCount) +
         static_cast<size_t>(kind.file_side);
}

IoStats::Shard& IoStats::Mine() {
  static std::atomic<size_t> next_shard{0};
  thread_local const size_t shard =
      next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shards_[shard];
}

void IoStats::Record(Kind kind, int64_t result) {
  Counters& c = Mine().counters[Index(kind)];
  c.entries.fetch_add(1, std::memory_order_relaxed);
  if (result < 0) {
    c.errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.bytes.fetch_add(static_cast<uint64_t>(result), std::memory_order_relaxed);
  }
}

void IoStats::RecordRejected() {
  Mine().rejected.fetch_add(1, std::memory_order_relaxed);
}

IoStats::Totals IoStats::Get(Kind kind) const {
  Totals t;
  for (const Shard& shard : shards_) {
    const Counters& c = shard.counters[Index(kind)];
    t.entries += c.entries.load(std::memory_order_relaxed);
    t.bytes += c.bytes.load(std::memory_order_relaxed);
    t.errors += c.errors.load(std::memory_order_relaxed);
  }
  return t;
}

uint64_t IoStats::rejected() const {
  uint64_t n = 0;
  for (const Shard& shard : shards_) {
    n += shard.rejected.load(std::memory_order_relaxed);
  }
  return n;
}

std::string IoStats::Render() const {
  std::string out =
      absl::StrFormat("%-16s %-10s %-10s %12s %16s %8s\n", "usrbio", "memory",
                      "file", "entries", "bytes", "errors");
  auto row = [&out](const char* op, const char* memory, const char* side,
                    const Totals& t) {
    absl::StrAppendFormat(&out, "%-16s %-10s %-10s %12u %16u %8u\n", op, memory,
                          side, t.entries, t.bytes, t.errors);
  };
  for (Op op : {Op::kRead, Op::kWrite}) {
    for (Memory memory :
         {Memory::kHost, Memory::kGpuBounce, Memory::kGpuDirect}) {
      for (FileSide side : {FileSide::kPageCache, FileSide::kODirect}) {
        // GPU memory is never read or written by the CPU (sqe_check.h).
        if (memory == Memory::kGpuDirect && side == FileSide::kPageCache) {
          continue;
        }
        row(OpName(op), MemoryName(memory), FileSideName(side),
            Get({op, memory, side}));
      }
    }
  }
  row("fsync", "-", "-", Get({Op::kSync, Memory::kHost, FileSide::kPageCache}));
  row("rejected", "-", "-", {rejected(), 0, rejected()});
  out += stages_.Render();
  return out;
}

}  // namespace fgds::session
