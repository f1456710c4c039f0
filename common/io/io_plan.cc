#include "common/io/io_plan.h"

#include <algorithm>

#include "common/io/chunking.h"

namespace fgds::io {
namespace {

// Whether `next` continues `prev` in the file and in memory.
bool Continues(const IoRequest& prev, const IoRequest& next) {
  return prev.op == next.op && !IsSync(prev.op) && prev.fd == next.fd &&
         prev.len > 0 && next.len > 0 &&
         prev.offset + prev.len == next.offset &&
         static_cast<char*>(prev.buf) + prev.len == next.buf;
}

}  // namespace

void PlanBatch(std::span<const IoRequest> batch, const PlanLimits& limits,
               IoPlan* out) {
  IoPlan& plan = *out;
  plan.units.clear();
  plan.pieces.clear();
  plan.group_starts.clear();
  // The shared chunking rule (chunking.h): a whole number of 4096 blocks.
  const uint64_t split = std::max<uint64_t>(
      limits.split_bytes & ~(kChunkAlignment - 1), kChunkAlignment);
  uint64_t total_bytes = 0;
  size_t i = 0;
  while (i < batch.size()) {
    // Merge: extend the run while requests continue each other.
    size_t end = i + 1;
    uint64_t len = batch[i].len;
    while (end < batch.size() && Continues(batch[end - 1], batch[end]) &&
           len + batch[end].len <= limits.merge_bytes) {
      len += batch[end].len;
      ++end;
    }
    PlannedUnit unit;
    unit.first_request = static_cast<uint32_t>(i);
    unit.requests = static_cast<uint32_t>(end - i);
    unit.first_piece = static_cast<uint32_t>(plan.pieces.size());
    const IoRequest& first = batch[i];
    // Split: pieces of at most `split` bytes, cut at 4096-aligned file
    // offsets (chunking.h); an empty request is one empty piece.
    uint64_t done = 0;
    do {
      const uint64_t piece =
          len == 0 ? 0 : ChunkLength(first.offset + done, len - done, split);
      plan.pieces.push_back(
          PlannedPiece{first.op, first.fd, static_cast<char*>(first.buf) + done,
                       static_cast<size_t>(piece), first.offset + done});
      done += piece;
    } while (done < len);
    unit.pieces = static_cast<uint32_t>(plan.pieces.size()) - unit.first_piece;
    plan.units.push_back(unit);
    total_bytes += len;
    i = end;
  }

  // Spread: as many groups as the bytes justify, at most one per worker
  // and one per piece; sizes differ by at most one piece.
  const uint64_t by_bytes = std::max<uint64_t>(
      1, total_bytes / std::max<size_t>(limits.spread_bytes, 1));
  const auto groups = static_cast<uint32_t>(std::min<uint64_t>(
      {by_bytes, static_cast<uint64_t>(std::max(limits.workers, 1)),
       std::max<uint64_t>(plan.pieces.size(), 1)}));
  const auto n = static_cast<uint64_t>(plan.pieces.size());
  for (uint32_t g = 0; g <= groups; ++g) {
    plan.group_starts.push_back(static_cast<uint32_t>(n * g / groups));
  }
}

UnitOutcome CombinePieces(std::span<const PlannedPiece> pieces,
                          std::span<const int64_t> results) {
  UnitOutcome outcome;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (results[k] < 0) {
      outcome.error = results[k];
      break;
    }
    outcome.bytes += static_cast<uint64_t>(results[k]);
    if (static_cast<uint64_t>(results[k]) < pieces[k].len) break;  // EOF
  }
  return outcome;
}

int64_t RequestResult(const UnitOutcome& outcome, uint64_t start,
                      uint64_t len) {
  if (outcome.bytes >= start + len) return static_cast<int64_t>(len);
  if (outcome.bytes > start) return static_cast<int64_t>(outcome.bytes - start);
  return outcome.error;
}

}  // namespace fgds::io
