#include "tools/probe/check.h"

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

Check Member(Level level, const char* hint = "") {
  Check c = MakeCheck("route x <-> y", level, "detail", hint);
  c.group = "GPU-NVMe route";
  return c;
}

TEST(CheckTest, Tags) {
  EXPECT_EQ(Tag(Level::kOk), "[ ok ]");
  EXPECT_EQ(Tag(Level::kWarn), "[warn]");
  EXPECT_EQ(Tag(Level::kFail), "[FAIL]");
  EXPECT_EQ(Tag(Level::kSkip), "[ -- ]");
  EXPECT_EQ(LevelName(Level::kFail), "fail");
}

TEST(CheckTest, FoldTakesTheBestLevel) {
  Check folded = Fold("route 0000:03:00.0",
                      {Member(Level::kFail, "fail hint"), Member(Level::kOk),
                       Member(Level::kWarn, "warn hint"), Member(Level::kOk),
                       Member(Level::kSkip)},
                      {"nvme0", "nvme1", "nvme2", "nvme3", "nvme4"});
  EXPECT_EQ(folded.name, "route 0000:03:00.0");
  EXPECT_EQ(folded.level, Level::kOk);
  EXPECT_EQ(folded.group, "GPU-NVMe route");
  EXPECT_EQ(folded.finding,
            "ok: nvme1 nvme3; warn: nvme2; fail: nvme0; skip: nvme4");
  EXPECT_EQ(folded.hint, "");
}

TEST(CheckTest, FoldKeepsTheBestMembersHint) {
  Check folded = Fold(
      "route g",
      {Member(Level::kFail, "fail hint"), Member(Level::kWarn, "warn hint")},
      {"nvme0", "nvme1"});
  EXPECT_EQ(folded.level, Level::kWarn);
  EXPECT_EQ(folded.hint, "warn hint");
  EXPECT_EQ(folded.finding, "warn: nvme1; fail: nvme0");
}

}  // namespace
}  // namespace fgds::probe
