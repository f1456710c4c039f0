// RegistrationKey (issue 17): keys are unique and never 0; only marked
// keys log their retirement; the log hands each retirement out once per
// reader position and says when a reader fell behind.
#include "backend/registration_key.h"

#include <array>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

TEST(RegistrationKeyTest, KeysAreUniqueAndNeverZero) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    RegistrationKey k;
    EXPECT_NE(k.value(), 0u);
    EXPECT_TRUE(seen.insert(k.value()).second) << k.value();
  }
}

TEST(RegistrationKeyTest, OnlyMarkedKeysAreLogged) {
  const uint64_t start = RetiredCount();
  uint64_t marked_value = 0;
  {
    RegistrationKey unmarked;
    RegistrationKey marked;
    marked.MarkRegistered();
    marked_value = marked.value();
  }
  std::array<uint64_t, 8> keys;
  size_t n = 0;
  uint64_t to = 0;
  ASSERT_TRUE(RetiredSince(start, &to, keys, &n));
  EXPECT_EQ(to, start + 1);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(keys[0], marked_value);
  // Nothing new since.
  ASSERT_TRUE(RetiredSince(to, &to, keys, &n));
  EXPECT_EQ(n, 0u);
}

TEST(RegistrationKeyTest, AReaderTooFarBehindIsTold) {
  const uint64_t start = RetiredCount();
  for (int i = 0; i < 10; ++i) {
    RegistrationKey k;
    k.MarkRegistered();
  }
  std::array<uint64_t, 4> small;
  size_t n = 0;
  uint64_t to = 0;
  EXPECT_FALSE(RetiredSince(start, &to, small, &n));  // does not fit
  EXPECT_EQ(to, start + 10);
  for (uint64_t i = 0; i < kRetiredLogSize + 1; ++i) {
    RegistrationKey k;
    k.MarkRegistered();
  }
  std::vector<uint64_t> big(2 * kRetiredLogSize);
  EXPECT_FALSE(RetiredSince(to, &to, big, &n));  // overwritten
}

TEST(RegistrationKeyTest, ConcurrentRetirementsAreEachLoggedOnce) {
  const uint64_t start = RetiredCount();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 100; ++i) {
        RegistrationKey k;
        k.MarkRegistered();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<uint64_t> keys(kRetiredLogSize);
  size_t n = 0;
  uint64_t to = 0;
  ASSERT_TRUE(RetiredSince(start, &to, keys, &n));
  EXPECT_EQ(n, 400u);
  std::set<uint64_t> unique(keys.begin(), keys.begin() + n);
  EXPECT_EQ(unique.size(), 400u);
}

}  // namespace
}  // namespace fgds::backend
