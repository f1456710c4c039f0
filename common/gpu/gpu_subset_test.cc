#include "common/gpu/gpu_subset.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace fgds::gpu {
namespace {

const GpuIdentity kGpu0{0, "0000:1b:00.0",
                        "gpu-5e0c0e4a-1111-2222-3333-444455556666"};
const GpuIdentity kGpu1{1, "0000:3b:00.0",
                        "gpu-aaaaaaaa-bbbb-cccc-dddd-eeeeffff0000"};
const GpuIdentity kGpu2{2, "0001:c1:00.0", ""};

GpuSubset Parse(const char* spec) {
  GpuSubset subset;
  std::string why;
  EXPECT_EQ(ParseGpuSubset(spec, &subset, &why), 0) << spec << ": " << why;
  return subset;
}

TEST(GpuSubsetTest, EmptyAndAllSelectEverything) {
  for (const char* spec : {"", "  ", "all", "ALL"}) {
    GpuSubset s = Parse(spec);
    EXPECT_TRUE(s.all) << spec;
    EXPECT_TRUE(s.Contains(kGpu0));
    EXPECT_TRUE(s.Contains(GpuIdentity{}));
  }
}

TEST(GpuSubsetTest, IndexesPciAddressesAndUuids) {
  GpuSubset s = Parse("0, 0001:C1:00.0");
  EXPECT_FALSE(s.all);
  EXPECT_TRUE(s.Contains(kGpu0));
  EXPECT_FALSE(s.Contains(kGpu1));
  EXPECT_TRUE(s.Contains(kGpu2));

  s = Parse("GPU-AAAAAAAA-BBBB-CCCC-DDDD-EEEEFFFF0000");
  EXPECT_FALSE(s.Contains(kGpu0));
  EXPECT_TRUE(s.Contains(kGpu1));
  EXPECT_FALSE(s.Contains(kGpu2));  // no UUID known: never matches one

  // Short PCI form (domain 0) and CUDA's 8-digit domain.
  EXPECT_TRUE(Parse("3b:00.0").Contains(kGpu1));
  EXPECT_TRUE(Parse("00000000:3B:00.0").Contains(kGpu1));
}

TEST(GpuSubsetTest, AnIdentityWithoutIndexMatchesNoIndexEntry) {
  GpuSubset s = Parse("0");
  EXPECT_FALSE(s.Contains(GpuIdentity{-1, "0000:1b:00.0", ""}));
}

TEST(GpuSubsetTest, BadEntriesAreRejectedByName) {
  const struct {
    const char* spec;
    const char* names;
  } kBad[] = {
      {"0,,1", "empty entry"},
      {"0,", "empty entry"},
      {"-1", "\"-1\""},
      {"99999", "\"99999\""},
      {"gpu0", "\"gpu0\""},
      {"0000:3b:00", "\"0000:3b:00\""},
      {"0000:3b:00.8", "\"0000:3b:00.8\""},
      {"GPU-1234", "\"GPU-1234\""},
      {"MIG-5e0c0e4a-1111-2222-3333-444455556666", "MIG-"},
      {"1 2", "\"1 2\""},
  };
  for (const auto& bad : kBad) {
    GpuSubset s;
    std::string why;
    EXPECT_EQ(ParseGpuSubset(bad.spec, &s, &why), -EINVAL) << bad.spec;
    EXPECT_NE(why.find(bad.names), std::string::npos)
        << bad.spec << ": " << why;
  }
}

TEST(GpuSubsetTest, NormalizePciBusId) {
  EXPECT_EQ(NormalizePciBusId("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizePciBusId("3b:00.1"), "0000:3b:00.1");
  EXPECT_EQ(NormalizePciBusId("00000001:3b:00.0"), "0001:3b:00.0");
  EXPECT_EQ(NormalizePciBusId("10000:3b:00.0"), "");
  EXPECT_EQ(NormalizePciBusId("zz:00.0"), "");
  EXPECT_EQ(NormalizePciBusId(""), "");
  EXPECT_EQ(NormalizePciBusId("."), "");
}

TEST(GpuSubsetTest, EveryEntryMustNameAGpu) {
  const std::vector<GpuIdentity> gpus = {kGpu0, kGpu1};
  std::string why;
  EXPECT_EQ(CheckSubsetNamesGpus(Parse("1,0000:1b:00.0"), gpus, "--gpus", &why),
            0);
  EXPECT_EQ(CheckSubsetNamesGpus(Parse("all"), {}, "--gpus", &why), 0);
  EXPECT_EQ(CheckSubsetNamesGpus(Parse("0,2"), gpus, "FGDS_GPUS", &why),
            -ENODEV);
  EXPECT_NE(why.find("FGDS_GPUS=0,2: \"2\" names no GPU"), std::string::npos)
      << why;
  EXPECT_NE(why.find("GPU 1 (0000:3b:00.0)"), std::string::npos) << why;
  EXPECT_EQ(CheckSubsetNamesGpus(Parse("0"), {}, "--gpus", &why), -ENODEV);
  EXPECT_NE(why.find("none found"), std::string::npos) << why;
}

TEST(GpuSubsetTest, ResolvedToPciAddresses) {
  const std::vector<GpuIdentity> gpus = {kGpu0, kGpu1, kGpu2};
  GpuAllowList list = ResolveGpuSubset(
      Parse("2,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeffff0000"), gpus);
  EXPECT_FALSE(list.all);
  EXPECT_EQ(list.pci_bus_ids,
            (std::vector<std::string>{"0000:3b:00.0", "0001:c1:00.0"}));
  EXPECT_TRUE(list.Allows("0000:3B:00.0"));
  EXPECT_TRUE(list.Allows("3b:00.0"));
  EXPECT_FALSE(list.Allows("0000:1b:00.0"));
  EXPECT_FALSE(list.Allows("garbage"));
  EXPECT_EQ(list.spec, "2,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeffff0000");
  list = ResolveGpuSubset(Parse("all"), gpus);
  EXPECT_TRUE(list.Allows("0000:1b:00.0"));
  EXPECT_TRUE(list.Allows("anything"));
}

}  // namespace
}  // namespace fgds::gpu
