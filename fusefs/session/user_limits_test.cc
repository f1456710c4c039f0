// UserLimits: charges per uid and daemon-wide, all or nothing, released by
// the Charge on every path.
#include "fusefs/session/user_limits.h"

#include <cerrno>
#include <memory>
#include <thread>
#include <vector>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

constexpr uid_t kAlice = 1001;
constexpr uid_t kBob = 1002;

UserLimitsConfig SmallConfig() {
  UserLimitsConfig config;
  config.per_user = {.sessions = 2,
                     .rings = 3,
                     .ring_entries = 1024,
                     .mappings = 4,
                     .bytes = 1 << 20,
                     .files = 5};
  config.daemon_mappings = 6;
  config.daemon_bytes = 3 << 19;  // 1.5 MiB
  config.daemon_files = 8;
  return config;
}

TEST(UserLimitsTest, EachPerUserLimitRefusesWithItsName) {
  struct Case {
    Usage amount;
    uint32_t limit;
  };
  const Case cases[] = {
      {{.sessions = 3}, FGDS_LIMIT_USER_SESSIONS},
      {{.rings = 4}, FGDS_LIMIT_USER_RINGS},
      {{.ring_entries = 1025}, FGDS_LIMIT_USER_RING_ENTRIES},
      {{.mappings = 5}, FGDS_LIMIT_USER_MAPPINGS},
      {{.bytes = (1 << 20) + 1}, FGDS_LIMIT_USER_BYTES},
      {{.files = 6}, FGDS_LIMIT_USER_FILES},
  };
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  for (const Case& c : cases) {
    Charge charge;
    uint32_t refused = 0;
    EXPECT_EQ(UserLimits::Take(limits, kBob, c.amount, &charge, &refused),
              -EDQUOT);
    EXPECT_EQ(refused, c.limit);
    EXPECT_TRUE(charge.empty());
  }
  const Usage held = limits->UsageOf(kBob);
  EXPECT_EQ(
      held.sessions + held.rings + held.mappings + held.bytes + held.files, 0u);
}

TEST(UserLimitsTest, OneUsersLimitLeavesTheOtherUntouched) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  std::vector<Charge> bobs;
  uint32_t refused = 0;
  for (int i = 0; i < 2; ++i) {
    Charge c;
    ASSERT_EQ(UserLimits::Take(limits, kBob, {.sessions = 1}, &c, &refused), 0);
    bobs.push_back(std::move(c));
  }
  Charge third;
  EXPECT_EQ(UserLimits::Take(limits, kBob, {.sessions = 1}, &third, &refused),
            -EDQUOT);
  EXPECT_EQ(refused, FGDS_LIMIT_USER_SESSIONS);
  Charge alice;
  EXPECT_EQ(UserLimits::Take(limits, kAlice, {.sessions = 1}, &alice, &refused),
            0);
  EXPECT_EQ(limits->UsageOf(kAlice).sessions, 1u);
  EXPECT_EQ(limits->Total().sessions, 3u);
}

TEST(UserLimitsTest, DaemonWideCapsRefuseWithEagain) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  uint32_t refused = 0;
  Charge a, b, c;
  ASSERT_EQ(UserLimits::Take(limits, kAlice, {.mappings = 4}, &a, &refused), 0);
  EXPECT_EQ(UserLimits::Take(limits, kBob, {.mappings = 3}, &b, &refused),
            -EAGAIN);
  EXPECT_EQ(refused, FGDS_LIMIT_DAEMON_MAPPINGS);
  ASSERT_EQ(UserLimits::Take(limits, kBob, {.mappings = 2}, &b, &refused), 0);
  Charge bytes_a, bytes_b;
  ASSERT_EQ(
      UserLimits::Take(limits, kAlice, {.bytes = 1 << 20}, &bytes_a, &refused),
      0);
  EXPECT_EQ(
      UserLimits::Take(limits, kBob, {.bytes = 1 << 20}, &bytes_b, &refused),
      -EAGAIN);
  EXPECT_EQ(refused, FGDS_LIMIT_DAEMON_BYTES);
  // A refused charge took nothing: bob's earlier mappings are all he has.
  EXPECT_EQ(limits->UsageOf(kBob).mappings, 2u);
  EXPECT_EQ(limits->UsageOf(kBob).bytes, 0u);
}

// Registered files, one charge each: a user stops at his own limit (EDQUOT)
// whatever his sessions, all users together at the daemon's (EAGAIN), and
// a file's charge, kept with the file, comes back when the file goes.
TEST(UserLimitsTest, RegisteredFilesStopAtTheUserAndDaemonLimits) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  uint32_t refused = 0;
  std::vector<Charge> bobs(6);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(UserLimits::Take(limits, kBob, {.files = 1}, &bobs[i], &refused),
              0);
  }
  EXPECT_EQ(UserLimits::Take(limits, kBob, {.files = 1}, &bobs[5], &refused),
            -EDQUOT);
  EXPECT_EQ(refused, FGDS_LIMIT_USER_FILES);
  std::vector<Charge> alices(5);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(
        UserLimits::Take(limits, kAlice, {.files = 1}, &alices[i], &refused),
        0);
  }
  EXPECT_EQ(
      UserLimits::Take(limits, kAlice, {.files = 1}, &alices[3], &refused),
      -EAGAIN);
  EXPECT_EQ(refused, FGDS_LIMIT_DAEMON_FILES);
  EXPECT_EQ(limits->Total().files, 8u);
  bobs[0].Release();
  EXPECT_EQ(limits->UsageOf(kBob).files, 4u);
  EXPECT_EQ(
      UserLimits::Take(limits, kAlice, {.files = 1}, &alices[3], &refused), 0);
  bobs.clear();
  alices.clear();
  EXPECT_EQ(limits->Total().files, 0u);
}

TEST(UserLimitsTest, ChargesGiveBackOnDestructionMoveAndRelease) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  uint32_t refused = 0;
  {
    Charge c;
    ASSERT_EQ(UserLimits::Take(limits, kBob, {.rings = 1, .bytes = 100}, &c,
                               &refused),
              0);
    Charge moved = std::move(c);
    EXPECT_TRUE(c.empty());
    EXPECT_EQ(limits->UsageOf(kBob).rings, 1u);
    Charge assigned;
    assigned = std::move(moved);
    EXPECT_EQ(limits->UsageOf(kBob).rings, 1u);
  }
  EXPECT_EQ(limits->UsageOf(kBob).rings, 0u);
  EXPECT_EQ(limits->Total().bytes, 0u);
  Charge r;
  ASSERT_EQ(UserLimits::Take(limits, kBob, {.rings = 3}, &r, &refused), 0);
  r.Release();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(limits->UsageOf(kBob).rings, 0u);
}

TEST(UserLimitsTest, ChargeOutlivesTheTablesOtherOwners) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  uint32_t refused = 0;
  Charge c;
  ASSERT_EQ(UserLimits::Take(limits, kBob, {.mappings = 1}, &c, &refused), 0);
  // An I/O in flight may release its iov after the server dropped the
  // table: the charge keeps it alive.
  limits.reset();
  c.Release();
  SUCCEED();
}

TEST(UserLimitsTest, HugeAmountsDoNotWrapAround) {
  auto limits = std::make_shared<UserLimits>(SmallConfig());
  uint32_t refused = 0;
  Charge a, b;
  ASSERT_EQ(UserLimits::Take(limits, kBob, {.bytes = 1000}, &a, &refused), 0);
  EXPECT_EQ(
      UserLimits::Take(limits, kBob, {.bytes = UINT64_MAX - 10}, &b, &refused),
      -EDQUOT);
  EXPECT_EQ(refused, FGDS_LIMIT_USER_BYTES);
}

TEST(UserLimitsTest, NoTableMeansNoLimits) {
  Charge c;
  uint32_t refused = 7;
  EXPECT_EQ(
      UserLimits::Take(nullptr, kBob, {.mappings = 1u << 30}, &c, &refused), 0);
  EXPECT_EQ(refused, FGDS_LIMIT_NONE);
  EXPECT_TRUE(c.empty());
}

TEST(UserLimitsTest, ConcurrentChargesNeverPassTheLimit) {
  UserLimitsConfig config = SmallConfig();
  config.per_user.mappings = 100;
  config.daemon_mappings = 100;
  auto limits = std::make_shared<UserLimits>(config);
  std::vector<std::thread> threads;
  std::vector<std::vector<Charge>> held(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        Charge c;
        uint32_t refused = 0;
        if (UserLimits::Take(limits, kBob, {.mappings = 1}, &c, &refused) ==
            0) {
          held[t].push_back(std::move(c));
        }
        if (i % 3 == 0 && !held[t].empty()) held[t].pop_back();
      }
    });
  }
  for (auto& t : threads) t.join();
  size_t kept = 0;
  for (auto& h : held) kept += h.size();
  EXPECT_LE(kept, 100u);
  EXPECT_EQ(limits->UsageOf(kBob).mappings, kept);
  held.clear();
  EXPECT_EQ(limits->Total().mappings, 0u);
}

}  // namespace
}  // namespace fgds::session
