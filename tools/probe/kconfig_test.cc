#include "tools/probe/kconfig.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

constexpr char kConfig[] =
    "#\n"
    "# Automatically generated file; DO NOT EDIT.\n"
    "CONFIG_MODULES=y\n"
    "CONFIG_ZONE_DEVICE=y\n"
    "# CONFIG_PCI_P2PDMA is not set\n"
    "CONFIG_DMA_SHARED_BUFFER=m\n"
    "CONFIG_LOCALVERSION=\"-fgds\"\n"
    "CONFIG_NR_CPUS=64\n"
    "garbage line\n";

TEST(KconfigTest, ParsesValuesAndNotSet) {
  KernelConfig config = ParseKernelConfig(kConfig);
  EXPECT_EQ(ConfigValue(config, "CONFIG_MODULES"), "y");
  EXPECT_EQ(ConfigValue(config, "CONFIG_DMA_SHARED_BUFFER"), "m");
  EXPECT_EQ(ConfigValue(config, "CONFIG_PCI_P2PDMA"), "n");
  EXPECT_EQ(ConfigValue(config, "CONFIG_LOCALVERSION"), "\"-fgds\"");
  EXPECT_EQ(ConfigValue(config, "CONFIG_NR_CPUS"), "64");
  EXPECT_EQ(ConfigValue(config, "CONFIG_ABSENT"), "n");
  EXPECT_EQ(config.size(), 6u);
}

TEST(KconfigTest, CheckLevels) {
  KernelConfig config = ParseKernelConfig(kConfig);
  struct Case {
    const char* symbol;
    Level level;
  } cases[] = {
      {"CONFIG_MODULES", Level::kOk},
      {"CONFIG_ZONE_DEVICE", Level::kOk},
      {"CONFIG_DMA_SHARED_BUFFER", Level::kOk},  // =m is enough
      {"CONFIG_PCI_P2PDMA", Level::kWarn},       // advisory only
      {"CONFIG_MEMORY_HOTPLUG", Level::kFail},   // absent = not set
  };
  for (const Case& c : cases) {
    Check check = CheckConfigSymbol(config, c.symbol);
    EXPECT_EQ(check.level, c.level) << c.symbol;
    EXPECT_EQ(check.name, c.symbol);
    EXPECT_EQ(check.hint.empty(), c.level == Level::kOk) << c.symbol;
  }
}

class GunzipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/fgds-kconfig-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(GunzipTest, RoundTrip) {
  std::string big;
  for (int i = 0; i < 5000; ++i) big += kConfig;  // larger than a pipe
  std::string path = Write("config", big);
  ASSERT_EQ(std::system(("gzip -n '" + path + "'").c_str()), 0);
  absl::StatusOr<std::string> text = GunzipFile(path + ".gz");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, big);
}

TEST_F(GunzipTest, RejectsGarbageAndMissingFiles) {
  EXPECT_FALSE(GunzipFile(Write("garbage.gz", "not gzip at all")).ok());
  EXPECT_FALSE(GunzipFile(dir_ + "/missing.gz").ok());
}

}  // namespace
}  // namespace fgds::probe
