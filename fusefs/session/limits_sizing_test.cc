// SizeUserLimits: defaults follow the machine and keep the sum over users
// below what the kernel allows the daemon.
#include "fusefs/session/limits_sizing.h"

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

TEST(LimitsSizingTest, TypicalServer) {
  MachineFacts facts{.ram_bytes = 512 * kGiB,
                     .max_map_count = 65530,
                     .address_space = 128 * kTiB,
                     .cpus = 64,
                     .fd_limit = 1 << 20};
  UserLimitsConfig c = SizeUserLimits(facts);
  EXPECT_EQ(c.daemon_files, 262144u);  // a quarter of the descriptors
  EXPECT_EQ(c.per_user.files, 32768u);
  EXPECT_EQ(c.daemon_mappings, 32765u);
  EXPECT_EQ(c.daemon_bytes, 64 * kTiB);
  EXPECT_EQ(c.per_user.mappings, 32765u / 8);
  EXPECT_EQ(c.per_user.bytes, 512 * kGiB);  // RAM, below 8 TiB
  EXPECT_EQ(c.per_user.sessions, 256u);
  EXPECT_EQ(c.per_user.rings, 1024u);
  EXPECT_EQ(c.per_user.ring_entries, 32768u * 64);
}

TEST(LimitsSizingTest, SmallMachineKeepsUsableFloors) {
  MachineFacts facts{.ram_bytes = 512 << 20,
                     .max_map_count = 1000,
                     .address_space = 128 * kTiB,
                     .cpus = 1};
  UserLimitsConfig c = SizeUserLimits(facts);
  EXPECT_EQ(c.daemon_mappings, 500u);
  EXPECT_EQ(c.per_user.mappings, 64u);
  EXPECT_EQ(c.per_user.bytes, kGiB);
  EXPECT_EQ(c.per_user.sessions, 16u);
  EXPECT_EQ(c.per_user.rings, 64u);
  EXPECT_EQ(c.per_user.ring_entries, 65536u);
}

TEST(LimitsSizingTest, AddressSpaceLimitBoundsBytes) {
  // A daemon under `ulimit -v` (RLIMIT_AS of 64 GiB) on a big machine: one
  // user may not map more than an eighth of half of it.
  MachineFacts facts{.ram_bytes = 1024 * kGiB,
                     .max_map_count = 262144,
                     .address_space = 64 * kGiB,
                     .cpus = 8};
  UserLimitsConfig c = SizeUserLimits(facts);
  EXPECT_EQ(c.daemon_bytes, 32 * kGiB);
  EXPECT_EQ(c.per_user.bytes, 4 * kGiB);
  EXPECT_EQ(c.daemon_mappings, 131072u);
}

TEST(LimitsSizingTest, FilesLeaveDescriptorsForFuse) {
  MachineFacts facts{.ram_bytes = 4 * kGiB,
                     .max_map_count = 65530,
                     .address_space = 128 * kTiB,
                     .cpus = 2,
                     .fd_limit = 20000};
  UserLimitsConfig c = SizeUserLimits(facts);
  // Two descriptors a file at most: half of the 20,000 for usrbio files.
  EXPECT_EQ(c.daemon_files, 5000u);
  EXPECT_EQ(c.per_user.files, 625u);
  facts.fd_limit = 64;
  c = SizeUserLimits(facts);
  EXPECT_EQ(c.daemon_files, 16u);
  EXPECT_EQ(c.per_user.files, 16u);
}

TEST(LimitsSizingTest, ReadsThisMachine) {
  MachineFacts facts = ReadMachineFacts();
  EXPECT_GT(facts.ram_bytes, 0u);
  EXPECT_GT(facts.max_map_count, 0u);
  EXPECT_GT(facts.address_space, 0u);
  EXPECT_GE(facts.cpus, 1u);
}

}  // namespace
}  // namespace fgds::session
