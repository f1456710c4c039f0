#include "tests/lib/fsx_model.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace fgds::testing::fsx {
namespace {

// SplitMix64's finalizer: cheap, and every input bit affects every output
// bit, so neighbouring ops and offsets get unrelated bytes.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t OpKey(uint64_t seed, uint64_t op) { return Mix(seed ^ Mix(op)); }

// One 64-bit word of pattern covers the 8 bytes of an aligned 8-byte file
// block, so filling costs one Mix per 8 bytes.
uint64_t PatternWord(uint64_t key, uint64_t offset) {
  return Mix(key + (offset >> 3));
}

uint8_t ByteOf(uint64_t word, uint64_t offset) {
  return static_cast<uint8_t>(word >> (8 * (offset & 7)));
}

}  // namespace

uint8_t PatternByte(uint64_t seed, uint64_t op, uint64_t offset) {
  return ByteOf(PatternWord(OpKey(seed, op), offset), offset);
}

void FillPattern(uint64_t seed, uint64_t op, uint64_t offset, uint8_t* buf,
                 size_t len) {
  const uint64_t key = OpKey(seed, op);
  size_t i = 0;
  // Head, up to the next 8-byte boundary.
  for (; i < len && ((offset + i) & 7) != 0; ++i) {
    buf[i] = PatternByte(seed, op, offset + i);
  }
  // Whole words; little-endian byte order matches ByteOf.
  for (; i + 8 <= len; i += 8) {
    const uint64_t word = PatternWord(key, offset + i);
    for (int b = 0; b < 8; ++b)
      buf[i + b] = static_cast<uint8_t>(word >> (8 * b));
  }
  for (; i < len; ++i)
    buf[i] = ByteOf(PatternWord(key, offset + i), offset + i);
}

uint64_t MatchingOp(uint64_t seed, uint64_t max_op, uint64_t offset,
                    const uint8_t* actual, size_t len) {
  assert(len >= 4);
  for (uint64_t op = max_op; op >= 1; --op) {
    const uint64_t key = OpKey(seed, op);
    size_t i = 0;
    while (i < len &&
           ByteOf(PatternWord(key, offset + i), offset + i) == actual[i]) {
      ++i;
    }
    if (i == len) return op;
  }
  return 0;
}

void FileModel::Grow(uint32_t op, uint64_t new_size) {
  if (new_size <= data_.size()) return;
  data_.resize(new_size, 0);
  last_op_.resize(new_size, op);
}

void FileModel::Write(uint32_t op, uint64_t offset, const uint8_t* buf,
                      size_t len) {
  Grow(op, offset + len);
  std::memcpy(data_.data() + offset, buf, len);
  std::fill_n(last_op_.begin() + offset, len, op);
}

void FileModel::Truncate(uint32_t op, uint64_t new_size) {
  if (new_size < data_.size()) {
    data_.resize(new_size);
    last_op_.resize(new_size);
  } else {
    Grow(op, new_size);
  }
}

void FileModel::Zero(uint32_t op, uint64_t offset, uint64_t len, bool extend) {
  if (extend) Grow(op, offset + len);
  if (offset >= data_.size()) return;
  len = std::min<uint64_t>(len, data_.size() - offset);
  std::fill_n(data_.begin() + offset, len, 0);
  std::fill_n(last_op_.begin() + offset, len, op);
}

int64_t FileModel::FirstMismatch(uint64_t offset, const uint8_t* actual,
                                 size_t len) const {
  assert(offset + len <= data_.size());
  const uint8_t* expected = data_.data() + offset;
  // memcmp first: the common case is a match, and it is much faster than
  // a byte loop.
  if (std::memcmp(expected, actual, len) == 0) return -1;
  for (size_t i = 0; i < len; ++i) {
    if (expected[i] != actual[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace fgds::testing::fsx
