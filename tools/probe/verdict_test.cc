#include "tools/probe/verdict.h"

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

Check Grouped(const char* name, Level level, const char* group) {
  Check c = MakeCheck(name, level, "found");
  c.group = group;
  return c;
}

TEST(VerdictTest, AllOkIsAvailable) {
  Verdict v = Decide({MakeCheck("kernel", Level::kOk, "6.1"),
                      MakeCheck("CONFIG_PCI_P2PDMA", Level::kWarn, "not set"),
                      MakeCheck("kernel config", Level::kSkip, "unknown"),
                      Grouped("route a", Level::kOk, "route")},
                     /*gpu_usable=*/true);
  EXPECT_EQ(v.kind, VerdictKind::kAvailable);
  EXPECT_EQ(v.exit_status, 0);
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_EQ(VerdictLine(v), "direct path: AVAILABLE");
  EXPECT_EQ(VerdictName(v.kind), "available");
}

TEST(VerdictTest, FailureWithUsableGpuIsBounceOnly) {
  Verdict v = Decide({MakeCheck("kernel", Level::kOk, "6.1"),
                      MakeCheck("iommu", Level::kFail, "translated"),
                      MakeCheck("fgds module", Level::kFail, "not loaded")},
                     /*gpu_usable=*/true);
  EXPECT_EQ(v.kind, VerdictKind::kBounceOnly);
  EXPECT_EQ(v.exit_status, 1);
  EXPECT_EQ(VerdictLine(v),
            "bounce path only (direct path NOT AVAILABLE: iommu: translated; "
            "fgds module: not loaded)");
}

TEST(VerdictTest, NoGpuIsNotAvailable) {
  Verdict v = Decide({MakeCheck("gpu", Level::kFail, "no NVIDIA GPU")},
                     /*gpu_usable=*/false);
  EXPECT_EQ(v.kind, VerdictKind::kNotAvailable);
  EXPECT_EQ(v.exit_status, 1);
  EXPECT_EQ(VerdictLine(v), "direct path: NOT AVAILABLE (gpu: no NVIDIA GPU)");
  EXPECT_EQ(VerdictName(v.kind), "not_available");
}

TEST(VerdictTest, GroupPassesWhenOneMemberPasses) {
  Verdict v = Decide({Grouped("route a", Level::kFail, "route"),
                      Grouped("route b", Level::kWarn, "route")},
                     true);
  EXPECT_EQ(v.kind, VerdictKind::kAvailable);
}

TEST(VerdictTest, GroupFailsWhenNoMemberPasses) {
  Verdict v = Decide({Grouped("route a", Level::kFail, "route"),
                      Grouped("route b", Level::kFail, "route"),
                      Grouped("p2p a", Level::kSkip, "module route")},
                     true);
  EXPECT_EQ(v.kind, VerdictKind::kBounceOnly);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0], "route: none passes");
}

TEST(VerdictTest, SkippedGroupDoesNotBlock) {
  Verdict v = Decide({Grouped("p2p a", Level::kSkip, "module route"),
                      Grouped("p2p b", Level::kSkip, "module route")},
                     true);
  EXPECT_EQ(v.kind, VerdictKind::kAvailable);
}

}  // namespace
}  // namespace fgds::probe
