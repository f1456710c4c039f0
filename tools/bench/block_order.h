// File: tools/bench/block_order.h
//
// The order in which a worker visits the blocks of its region, and the
// contents it writes into them.
#ifndef FGDS_TOOLS_BENCH_BLOCK_ORDER_H_
#define FGDS_TOOLS_BENCH_BLOCK_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tools/bench/flags.h"

namespace fgds::bench {

// BlockOrder maps the i-th I/O of a worker to a block index in
// [0, count). kSeq is ascending. kRand is a seeded random permutation:
// every block is visited exactly once, so a random pass moves the same bytes
// as a sequential one and a cold random read never re-reads a block it has
// already pulled into the cache.
//
// Memory: 8 bytes per block for kRand (built before the timed phase),
// nothing for kSeq.
class BlockOrder {
 public:
  BlockOrder(Pattern pattern, uint64_t count, uint64_t seed);

  uint64_t size() const { return count_; }
  uint64_t operator[](uint64_t i) const {
    return permutation_.empty() ? i : permutation_[i];
  }

 private:
  uint64_t count_;
  std::vector<uint64_t> permutation_;  // empty for kSeq
};

// FillBlockData fills `buf` with pseudo-random bytes from `seed`, so that no
// layer can take a shortcut for zero or repeated pages.
void FillBlockData(void* buf, size_t len, uint64_t seed);

// StampBlock writes (file offset, tag) into the first and last 16 bytes of
// a block about to be written; CheckBlock tells whether a block read back
// from `offset` carries the same stamp. REQUIRES: len >= 32.
void StampBlock(void* buf, size_t len, uint64_t offset, uint64_t tag);
bool CheckBlock(const void* buf, size_t len, uint64_t offset, uint64_t tag);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_BLOCK_ORDER_H_
