#include "tools/probe/nvidia.h"

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

TEST(NvidiaTest, FlavorFromProcVersion) {
  EXPECT_EQ(FlavorFromProcVersion(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                "550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"
                "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            NvidiaFlavor::kOpen);
  EXPECT_EQ(FlavorFromProcVersion(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07  "
                "Sat Feb 17 22:55:48 UTC 2024\n"),
            NvidiaFlavor::kProprietary);
  EXPECT_EQ(FlavorFromProcVersion(""), NvidiaFlavor::kUnknown);
  // Only the first line counts.
  EXPECT_EQ(FlavorFromProcVersion("NVRM\nOpen Kernel Module\n"),
            NvidiaFlavor::kUnknown);
}

TEST(NvidiaTest, FlavorFromTaint) {
  EXPECT_EQ(FlavorFromTaint("POE"), NvidiaFlavor::kProprietary);
  EXPECT_EQ(FlavorFromTaint("OE"), NvidiaFlavor::kOpen);
  EXPECT_EQ(FlavorFromTaint(""), NvidiaFlavor::kUnknown);
}

TEST(NvidiaTest, DriverMajor) {
  EXPECT_EQ(DriverMajor("550.54.14"), 550);
  EXPECT_EQ(DriverMajor("515"), 515);
  EXPECT_EQ(DriverMajor(""), -1);
  EXPECT_EQ(DriverMajor("abc.1"), -1);
}

NvidiaDriver Driver(bool loaded, const char* version, NvidiaFlavor flavor,
                    bool drm = false) {
  NvidiaDriver d;
  d.loaded = loaded;
  d.version = version;
  d.flavor = flavor;
  d.drm_loaded = drm;
  return d;
}

TEST(NvidiaTest, DmaBufCheck) {
  struct Case {
    NvidiaDriver driver;
    Level level;
  } cases[] = {
      {Driver(true, "550.54.14", NvidiaFlavor::kOpen), Level::kOk},
      {Driver(true, "515.43.04", NvidiaFlavor::kOpen), Level::kOk},
      {Driver(true, "510.47.03", NvidiaFlavor::kOpen), Level::kFail},
      {Driver(true, "550.54.14", NvidiaFlavor::kProprietary), Level::kFail},
      {Driver(true, "550.54.14", NvidiaFlavor::kUnknown), Level::kWarn},
      {Driver(true, "", NvidiaFlavor::kOpen), Level::kWarn},
      {Driver(false, "", NvidiaFlavor::kUnknown), Level::kSkip},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DmaBufCheck(c.driver).level, c.level)
        << c.driver.version << " " << static_cast<int>(c.driver.flavor);
  }
}

TEST(NvidiaTest, ModuleAndDrmChecks) {
  NvidiaDriver none = Driver(false, "", NvidiaFlavor::kUnknown);
  EXPECT_EQ(NvidiaModuleCheck(none, /*have_gpu=*/true).level, Level::kFail);
  EXPECT_EQ(NvidiaModuleCheck(none, /*have_gpu=*/false).level, Level::kSkip);
  NvidiaDriver open = Driver(true, "550.54.14", NvidiaFlavor::kOpen);
  EXPECT_EQ(NvidiaModuleCheck(open, true).level, Level::kOk);
  EXPECT_EQ(NvidiaDrmCheck(open).level, Level::kOk);
  open.drm_loaded = true;
  EXPECT_EQ(NvidiaDrmCheck(open).level, Level::kWarn);
}

}  // namespace
}  // namespace fgds::probe
