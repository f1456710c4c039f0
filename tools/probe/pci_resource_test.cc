#include "tools/probe/pci_resource.h"

#include "gtest/gtest.h"

namespace fgds::probe {
namespace {

// An H100's resource file: BAR0 16 MiB registers, BAR1 64 GiB
// prefetchable 64-bit (takes BAR1+2), BAR3 32 MiB, ROM unassigned.
constexpr char kH100[] =
    "0x00000000e2000000 0x00000000e2ffffff 0x0000000000040200\n"
    "0x0000220000000000 0x0000220fffffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
    "0x0000221000000000 0x0000221001ffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

TEST(PciResourceTest, ParsesBars) {
  auto bars = ParseResourceFile(kH100);
  ASSERT_TRUE(bars.ok()) << bars.status();
  ASSERT_EQ(bars->size(), 7u);
  const PciResource& bar0 = (*bars)[0];
  EXPECT_EQ(bar0.size(), uint64_t{16} << 20);
  EXPECT_TRUE(bar0.is_memory());
  EXPECT_FALSE(bar0.prefetchable());
  const PciResource& bar1 = (*bars)[1];
  EXPECT_EQ(bar1.index, 1);
  EXPECT_EQ(bar1.start, 0x220000000000u);
  EXPECT_EQ(bar1.size(), uint64_t{64} << 30);
  EXPECT_TRUE(bar1.is_memory());
  EXPECT_TRUE(bar1.prefetchable());
  EXPECT_TRUE(bar1.is_64bit());
  EXPECT_EQ((*bars)[2].size(), 0u);  // upper half of the 64-bit BAR1
  EXPECT_EQ((*bars)[3].size(), uint64_t{32} << 20);
}

TEST(PciResourceTest, RejectsMalformedLines) {
  EXPECT_FALSE(ParseResourceFile("0x0 0x1\n").ok());
  EXPECT_FALSE(ParseResourceFile("0x0 0x1 zz\n").ok());
  auto empty = ParseResourceFile("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(PciResourceTest, ParseHexNumber) {
  EXPECT_EQ(*ParseHexNumber("0x10de\n"), 0x10deu);
  EXPECT_EQ(*ParseHexNumber("0x030200"), 0x030200u);
  EXPECT_EQ(*ParseHexNumber("ff"), 0xffu);
  EXPECT_FALSE(ParseHexNumber("").ok());
  EXPECT_FALSE(ParseHexNumber("0xgg").ok());
}

TEST(PciResourceTest, FormatBytes) {
  struct Case {
    uint64_t bytes;
    const char* text;
  } cases[] = {
      {0, "0 B"},
      {4096, "4 KiB"},
      {uint64_t{256} << 20, "256 MiB"},
      {uint64_t{64} << 30, "64 GiB"},
      {uint64_t{3} << 29, "1.5 GiB"},
      {1000, "1000 B"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatBytes(c.bytes), c.text);
}

}  // namespace
}  // namespace fgds::probe
