// File: tests/lib/fsx_op.h
//
// What one fsx op is (OpRecord, Describe) and how the random choices are
// drawn (Rng, PickOp, RandOffset, RandLen), for the engine in
// tests/lib/fsx.cc. Everything a seed means lives here: changing a weight
// or a distribution changes the sequence every seed produces.
//
// Thread safety: an Rng is used by one thread; the functions are pure.
#ifndef FGDS_TESTS_LIB_FSX_OP_H_
#define FGDS_TESTS_LIB_FSX_OP_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/lib/fsx.h"

namespace fgds::testing::fsx {

// SplitMix64: tiny, fast, and fully specified here, so a seed means the
// same sequence with every compiler and standard library (unlike the
// <random> distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0. Multiply-shift: the bias is < n / 2^64.
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >>
                                 64);
  }
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }

 private:
  uint64_t state_;
};

// PickOp draws an op type by the fixed weights in fsx_op.cc.
FsxOp PickOp(Rng& rng);
// RandOffset returns an offset in [0, limit), page aligned a quarter of the
// time. REQUIRES: limit > 0.
uint64_t RandOffset(Rng& rng, uint64_t limit, uint64_t page);
// RandLen returns a length in [1, max]. REQUIRES: max > 0.
uint64_t RandLen(Rng& rng, uint64_t max, uint64_t page);

// One writer op: planned from the Rng, then executed, then marked done.
struct OpRecord {
  uint64_t number = 0;  // 1-based; also the pattern's op number
  FsxOp type = FsxOp::kRead;
  uint8_t file = 0;
  uint8_t dst = 0;         // kCopyRange: destination file
  bool keep_size = false;  // kZeroRange, kFallocate: FALLOC_FL_KEEP_SIZE
  bool emulated = false;   // done without the native call (a fallback)
  bool done = false;
  uint64_t offset = 0;  // kTruncate: the new size
  uint64_t length = 0;
  uint64_t dst_offset = 0;   // kCopyRange
  uint64_t size_before = 0;  // of the file changed (dst for copies)
  uint64_t size_after = 0;   // valid once done
};

// Describe returns one line, e.g.
// "#17 copy_range f0 [0x1000,+0x200) -> f1@0x0 size 0x0->0x200".
std::string Describe(const OpRecord& op);

// Format is snprintf into a std::string (lines of a report; < 512 bytes).
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// HexBytes returns "0a ff 00 ...".
std::string HexBytes(const uint8_t* p, size_t n);

}  // namespace fgds::testing::fsx

#endif  // FGDS_TESTS_LIB_FSX_OP_H_
