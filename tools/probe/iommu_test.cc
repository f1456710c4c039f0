#include "tools/probe/iommu.h"

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

IommuFacts Facts(const char* cmdline, std::vector<std::string> iommus = {},
                 int groups = 0, std::vector<std::string> domains = {},
                 const char* config_default = "") {
  IommuFacts facts;
  facts.cmdline = cmdline;
  facts.iommus = std::move(iommus);
  facts.group_count = groups;
  facts.device_domains = std::move(domains);
  facts.config_default = config_default;
  return facts;
}

TEST(IommuTest, DecideMode) {
  struct Case {
    const char* what;
    IommuFacts facts;
    IommuMode mode;
  } cases[] = {
      {"nothing registered", Facts("root=/dev/sda1"), IommuMode::kOff},
      {"identity domains win over the cmdline",
       Facts("intel_iommu=on", {"dmar0"}, 40,
             {"0000:03:00.0=identity", "0000:04:00.0=identity"}),
       IommuMode::kPassthrough},
      {"one translated device",
       Facts("iommu=pt", {"dmar0"}, 40,
             {"0000:03:00.0=identity", "0000:04:00.0=DMA-FQ"}),
       IommuMode::kTranslated},
      {"iommu=pt", Facts("quiet iommu=pt", {"dmar0"}, 40),
       IommuMode::kPassthrough},
      {"intel_iommu=on iommu=pt",
       Facts("intel_iommu=on iommu=pt", {"dmar0"}, 40),
       IommuMode::kPassthrough},
      {"iommu=pt intel_iommu=on keeps pt",
       Facts("iommu=pt intel_iommu=on", {"dmar0"}, 40),
       IommuMode::kPassthrough},
      {"intel_iommu=on", Facts("intel_iommu=on", {"dmar0"}, 40),
       IommuMode::kTranslated},
      {"amd_iommu=off", Facts("amd_iommu=off", {"ivhd0"}, 0), IommuMode::kOff},
      {"iommu.passthrough=1", Facts("iommu.passthrough=1", {"smmu3.0"}, 8),
       IommuMode::kPassthrough},
      {"iommu.passthrough=0", Facts("iommu.passthrough=0", {"smmu3.0"}, 8),
       IommuMode::kTranslated},
      {"last option wins", Facts("iommu=pt iommu=nopt", {"dmar0"}, 4),
       IommuMode::kTranslated},
      {"options after -- belong to init",
       Facts("intel_iommu=on -- iommu=pt", {"dmar0"}, 4),
       IommuMode::kTranslated},
      {"config default passthrough",
       Facts("quiet", {"dmar0"}, 4, {}, "passthrough"),
       IommuMode::kPassthrough},
      {"config default translated",
       Facts("quiet", {"dmar0"}, 4, {}, "translated"), IommuMode::kTranslated},
      {"unknown default", Facts("quiet", {"dmar0"}, 4), IommuMode::kUnknown},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideIommuMode(c.facts).mode, c.mode) << c.what;
  }
}

TEST(IommuTest, CheckLevels) {
  EXPECT_EQ(IommuCheck({IommuMode::kOff, ""}).level, Level::kOk);
  EXPECT_EQ(IommuCheck({IommuMode::kPassthrough, ""}).level, Level::kOk);
  Check translated = IommuCheck({IommuMode::kTranslated, "x"});
  EXPECT_EQ(translated.level, Level::kFail);
  EXPECT_NE(translated.hint.find("iommu=pt"), std::string::npos);
  EXPECT_EQ(IommuCheck({IommuMode::kUnknown, ""}).level, Level::kWarn);
}

}  // namespace
}  // namespace fgds::probe
