// UsrbioLimits: options replace the machine's defaults one by one.
#include "fusefs/usrbio_limits.h"

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

session::MachineFacts Machine() {
  return {.ram_bytes = 16 * kGiB,
          .max_map_count = 65530,
          .address_space = uint64_t{1} << 47,
          .cpus = 4,
          .fd_limit = 1 << 20};
}

TEST(UsrbioLimitsTest, NoOptionsGiveTheMachinesDefaults) {
  DaemonOptions options;
  const session::UserLimitsConfig got = UsrbioLimits(options, Machine());
  const session::UserLimitsConfig want = session::SizeUserLimits(Machine());
  EXPECT_EQ(got.per_user.sessions, want.per_user.sessions);
  EXPECT_EQ(got.per_user.rings, want.per_user.rings);
  EXPECT_EQ(got.per_user.ring_entries, want.per_user.ring_entries);
  EXPECT_EQ(got.per_user.mappings, want.per_user.mappings);
  EXPECT_EQ(got.per_user.bytes, want.per_user.bytes);
  EXPECT_EQ(got.daemon_mappings, want.daemon_mappings);
  EXPECT_EQ(got.per_user.files, want.per_user.files);
  EXPECT_EQ(got.daemon_files, want.daemon_files);
  EXPECT_EQ(got.daemon_bytes, want.daemon_bytes);
}

TEST(UsrbioLimitsTest, EachOptionReplacesItsDefault) {
  DaemonOptions options;
  options.user_sessions = 2;
  options.user_rings = 3;
  options.user_ring_entries = 5;
  options.user_mappings = 7;
  options.user_bytes = 11 << 20;
  options.daemon_mappings = 13;
  options.daemon_bytes = 17 * kGiB;
  options.user_files = 19;
  options.daemon_files = 23;
  const session::UserLimitsConfig c = UsrbioLimits(options, Machine());
  EXPECT_EQ(c.per_user.files, 19u);
  EXPECT_EQ(c.daemon_files, 23u);
  EXPECT_NE(DescribeUsrbioLimits(c).find("19 files"), std::string::npos);
  EXPECT_EQ(c.per_user.sessions, 2u);
  EXPECT_EQ(c.per_user.rings, 3u);
  EXPECT_EQ(c.per_user.ring_entries, 5u);
  EXPECT_EQ(c.per_user.mappings, 7u);
  EXPECT_EQ(c.per_user.bytes, uint64_t{11} << 20);
  EXPECT_EQ(c.daemon_mappings, 13u);
  EXPECT_EQ(c.daemon_bytes, 17 * kGiB);
  EXPECT_NE(DescribeUsrbioLimits(c).find("2 sessions"), std::string::npos);
}

TEST(UsrbioLimitsTest, PerUserLimitsNeverExceedTheDaemonsCaps) {
  DaemonOptions options;
  options.daemon_mappings = 10;
  options.daemon_bytes = kGiB;
  options.user_bytes = 4 * kGiB;
  options.daemon_files = 7;
  options.user_files = 100;
  const session::UserLimitsConfig c = UsrbioLimits(options, Machine());
  EXPECT_EQ(c.per_user.files, 7u);
  EXPECT_EQ(c.per_user.mappings, 10u);
  EXPECT_EQ(c.per_user.bytes, kGiB);
}

}  // namespace
}  // namespace fgds::fusefs
