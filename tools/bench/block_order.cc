#include "tools/bench/block_order.h"

#include <cstring>
#include <random>

namespace fgds::bench {
namespace {

// splitmix64: fast, and good enough that the data is not compressible.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

struct Stamp {
  uint64_t offset;
  uint64_t tag;
};

}  // namespace

BlockOrder::BlockOrder(Pattern pattern, uint64_t count, uint64_t seed)
    : count_(count) {
  if (pattern == Pattern::kSeq) return;
  permutation_.resize(count);
  for (uint64_t i = 0; i < count; ++i) permutation_[i] = i;
  // Fisher-Yates with splitmix64 rather than std::shuffle, whose output is
  // implementation-defined: the same seed gives the same order everywhere.
  uint64_t state = seed;
  for (uint64_t i = count; i > 1; --i) {
    const uint64_t j = NextRandom(state) % i;
    std::swap(permutation_[i - 1], permutation_[j]);
  }
}

void FillBlockData(void* buf, size_t len, uint64_t seed) {
  auto* bytes = static_cast<unsigned char*>(buf);
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const uint64_t word = NextRandom(state);
    std::memcpy(bytes + i, &word, 8);
  }
  const uint64_t word = NextRandom(state);
  std::memcpy(bytes + i, &word, len - i);
}

void StampBlock(void* buf, size_t len, uint64_t offset, uint64_t tag) {
  const Stamp stamp{offset, tag};
  auto* bytes = static_cast<unsigned char*>(buf);
  std::memcpy(bytes, &stamp, sizeof(stamp));
  std::memcpy(bytes + len - sizeof(stamp), &stamp, sizeof(stamp));
}

bool CheckBlock(const void* buf, size_t len, uint64_t offset, uint64_t tag) {
  const Stamp want{offset, tag};
  const auto* bytes = static_cast<const unsigned char*>(buf);
  return std::memcmp(bytes, &want, sizeof(want)) == 0 &&
         std::memcmp(bytes + len - sizeof(want), &want, sizeof(want)) == 0;
}

}  // namespace fgds::bench
