// File: tests/lib/random_bytes.h
//
// RandomBytes: deterministic pseudo-random test data, the same for a seed on
// every run and compiler, so a failing byte check can be reproduced.
// Header-only, so unit tests outside tests/ can use it without the test
// library.
#ifndef FGDS_TESTS_LIB_RANDOM_BYTES_H_
#define FGDS_TESTS_LIB_RANDOM_BYTES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace fgds::testing {

inline std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> bytes(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t word = rng();
    std::memcpy(&bytes[i], &word, std::min<size_t>(8, n - i));
  }
  return bytes;
}

}  // namespace fgds::testing

#endif  // FGDS_TESTS_LIB_RANDOM_BYTES_H_
