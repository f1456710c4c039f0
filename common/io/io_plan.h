// File: common/io/io_plan.h
//
// How the io_uring engine turns a batch of requests into the pieces its
// workers run, and how the pieces' results become the requests' results.
// Pure functions, so every rule is unit-tested (io_plan_test.cc).
//
//   merge   consecutive requests of a batch that continue each other (same
//           fd and op, the next file offset and the next buffer byte) become
//           one unit, up to PlanLimits::merge_bytes: a run of small
//           sequential entries costs one system call, not one each;
//   split   a unit longer than split_bytes is cut into pieces of at most
//           that size (a multiple of 4096) at 4096-aligned file offsets,
//           the rule every FGDS chunker shares (chunking.h), so O_DIRECT
//           alignment survives; different workers copy or read them in
//           parallel;
//   spread  the pieces go to workers in contiguous groups; a group carries at
//           least spread_bytes (waking a worker costs more than copying a
//           few pages), and never more groups than workers.
#ifndef FGDS_COMMON_IO_IO_PLAN_H_
#define FGDS_COMMON_IO_IO_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/io/io_engine.h"

namespace fgds::io {

struct PlanLimits {
  size_t merge_bytes = size_t{1} << 20;
  size_t split_bytes = size_t{1} << 20;  // multiple of 4096
  size_t spread_bytes = size_t{32} << 10;
  int workers = 1;
};

// One system call's worth of a unit.
struct PlannedPiece {
  IoOp op = IoOp::kRead;
  int fd = -1;
  char* buf = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
};

// Requests [first_request, first_request + requests) of the batch, carried
// by pieces [first_piece, first_piece + pieces), in file order.
struct PlannedUnit {
  uint32_t first_request = 0;
  uint32_t requests = 0;
  uint32_t first_piece = 0;
  uint32_t pieces = 0;
};

struct IoPlan {
  std::vector<PlannedUnit> units;
  std::vector<PlannedPiece> pieces;
  // Piece groups, one per worker used: group g is pieces
  // [group_starts[g], group_starts[g + 1]); the last entry is pieces.size().
  std::vector<uint32_t> group_starts;
};

// PlanBatch plans `batch` into *plan, replacing what it held (callers
// reuse one plan to keep its capacity). Requests with len 0 become a unit of
// one empty piece, so every request still completes through the engine.
void PlanBatch(std::span<const IoRequest> batch, const PlanLimits& limits,
               IoPlan* plan);

// What a unit moved, from its pieces' results in file order (each bytes or
// -errno): the bytes up to the first short or failed piece, and that
// piece's error if it failed (else 0).
struct UnitOutcome {
  uint64_t bytes = 0;
  int64_t error = 0;
};
UnitOutcome CombinePieces(std::span<const PlannedPiece> pieces,
                          std::span<const int64_t> results);

// The result of the request at [start, start + len) of a unit, as pread or
// pwrite would report it: its bytes if any moved, else the unit's error at
// or before it, else 0 (end of file).
int64_t RequestResult(const UnitOutcome& outcome, uint64_t start, uint64_t len);

}  // namespace fgds::io

#endif  // FGDS_COMMON_IO_IO_PLAN_H_
