#include "tools/probe/topology.h"

#include "gtest/gtest.h"
#include "tools/probe/pci_inventory.h"

namespace fgds::probe {
namespace {

TEST(TopologyTest, IsPciAddress) {
  EXPECT_TRUE(IsPciAddress("0000:3b:00.0"));
  EXPECT_TRUE(IsPciAddress("10000:e1:00.7"));  // VMD domain
  EXPECT_FALSE(IsPciAddress("pci0000:00"));
  EXPECT_FALSE(IsPciAddress("0000:3b:00"));
  EXPECT_FALSE(IsPciAddress("0000:3b:00.0.1"));
  EXPECT_FALSE(IsPciAddress("nvme0"));
  EXPECT_FALSE(IsPciAddress("0000:3g:00.0"));
}

TEST(TopologyTest, ParsesSysfsPath) {
  auto loc = ParsePciSysfsPath(
      "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/"
      "0000:03:00.0");
  ASSERT_TRUE(loc.ok()) << loc.status();
  EXPECT_EQ(loc->host_bridge, "pci0000:00");
  EXPECT_EQ(loc->chain,
            (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0",
                                      "0000:02:00.0", "0000:03:00.0"}));
  EXPECT_FALSE(ParsePciSysfsPath("/sys/devices/virtual/block/loop0").ok());
  EXPECT_FALSE(ParsePciSysfsPath("/sys/devices/pci0000:00").ok());
}

PciLocation Loc(const char* path) { return *ParsePciSysfsPath(path); }

constexpr char kGpuUnderSwitch[] =
    "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/"
    "0000:03:00.0";
constexpr char kNvmeUnderSwitch[] =
    "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/"
    "0000:04:00.0";
constexpr char kNvmeOwnRootPort[] =
    "/sys/devices/pci0000:00/0000:00:02.0/0000:05:00.0";
constexpr char kNvmeOtherSocket[] =
    "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
constexpr char kOnRootBusA[] = "/sys/devices/pci0000:00/0000:00:04.0";
constexpr char kOnRootBusB[] = "/sys/devices/pci0000:00/0000:00:05.0";

TEST(TopologyTest, ClassifyRoute) {
  struct Case {
    const char* a;
    int numa_a;
    const char* b;
    int numa_b;
    Route route;
    const char* detail;
  } cases[] = {
      {kGpuUnderSwitch, 0, kNvmeUnderSwitch, 0, Route::kSameSwitch,
       "via switch 0000:01:00.0"},
      {kGpuUnderSwitch, -1, kNvmeOwnRootPort, -1, Route::kSameRootComplex,
       "via pci0000:00"},
      {kOnRootBusA, -1, kOnRootBusB, -1, Route::kSameRootComplex,
       "via pci0000:00"},
      {kGpuUnderSwitch, 0, kNvmeOtherSocket, 1, Route::kCrossRootComplex,
       "pci0000:00 vs pci0000:80, NUMA 0 vs 1"},
      {kGpuUnderSwitch, 0, kNvmeOtherSocket, 0, Route::kCrossRootComplex,
       "pci0000:00 vs pci0000:80"},
      {kGpuUnderSwitch, 0, kNvmeUnderSwitch, 1, Route::kCrossRootComplex,
       "NUMA 0 vs 1"},
      {"/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", -1,
       "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.1", -1,
       Route::kSameSwitch, "via root port 0000:00:01.0"},
  };
  for (const Case& c : cases) {
    RouteResult r = ClassifyRoute(Loc(c.a), c.numa_a, Loc(c.b), c.numa_b);
    EXPECT_EQ(r.route, c.route) << c.a << " / " << c.b;
    EXPECT_EQ(r.detail, c.detail) << c.a << " / " << c.b;
    // Symmetric.
    EXPECT_EQ(ClassifyRoute(Loc(c.b), c.numa_b, Loc(c.a), c.numa_a).route,
              c.route);
  }
}

TEST(TopologyTest, NamespaceOf) {
  EXPECT_TRUE(NamespaceOf("nvme0n1", "nvme0"));
  EXPECT_TRUE(NamespaceOf("nvme10n12", "nvme10"));
  EXPECT_FALSE(NamespaceOf("nvme0n1p1", "nvme0"));
  EXPECT_FALSE(NamespaceOf("nvme10n1", "nvme1"));
  EXPECT_FALSE(NamespaceOf("nvme1n1", "nvme0"));
  EXPECT_FALSE(NamespaceOf("nvme0n", "nvme0"));
  EXPECT_FALSE(NamespaceOf("sda", "nvme0"));
}

}  // namespace
}  // namespace fgds::probe
