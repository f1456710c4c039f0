#include "fusefs/session/refusal_log.h"

#include <string>

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

constexpr uint64_t kSecond = 1000000000u;

// A user refused in a burst gets one line per interval, and the next line
// says how many were left out; another user is not held back by him.
TEST(RefusalLogTest, OneLinePerUserPerIntervalWithTheSuppressedCount) {
  RefusalLog log(5 * kSecond);
  uint64_t suppressed = 99;
  EXPECT_TRUE(log.Admit(1002, 100 * kSecond, &suppressed));
  EXPECT_EQ(suppressed, 0u);
  int admitted = 0;
  for (int i = 1; i <= 1000; ++i) {
    admitted += log.Admit(1002, 100 * kSecond + i * 1000000u, &suppressed);
  }
  EXPECT_EQ(admitted, 0) << "a flood must not reach the log";
  // Alice, during bob's flood.
  EXPECT_TRUE(log.Admit(1001, 101 * kSecond, &suppressed));
  EXPECT_EQ(suppressed, 0u);
  // Bob's next line, an interval later, counts what was left out.
  EXPECT_TRUE(log.Admit(1002, 105 * kSecond, &suppressed));
  EXPECT_EQ(suppressed, 1000u);
  EXPECT_FALSE(log.Admit(1002, 106 * kSecond, &suppressed));
  EXPECT_TRUE(log.Admit(1002, 111 * kSecond, &suppressed));
  EXPECT_EQ(suppressed, 1u);
  EXPECT_NE(SuppressedNote(1000).find("1000 more"), std::string::npos);
  EXPECT_EQ(SuppressedNote(0), "");
}

// Many users, once each: the table stays bounded by those active in the
// last interval.
TEST(RefusalLogTest, QuietUsersAreForgotten) {
  RefusalLog log(kSecond);
  uint64_t suppressed = 0;
  for (uid_t uid = 0; uid < 5000; ++uid) {
    EXPECT_TRUE(log.Admit(uid, (10 + uid) * kSecond, &suppressed));
  }
  EXPECT_LE(log.tracked(), RefusalLog::kPruneAt + 1);
}

TEST(RefusalLogTest, NoLogMeansEveryLine) {
  uint64_t suppressed = 7;
  EXPECT_TRUE(AdmitRefusalLine(nullptr, 1002, &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

}  // namespace
}  // namespace fgds::session
