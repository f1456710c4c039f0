#include "backend/remote/crc32c.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::remote {
namespace {

// Check values from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, MatchesTheRfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(0, zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(0, ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(0, inc.data(), inc.size()), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(0, dec.data(), dec.size()), 0x113FDB5Cu);
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(0, check.data(), check.size()), 0xE3069283u);
}

TEST(Crc32cTest, ContinuingASumEqualsOneSumOverTheWhole) {
  std::vector<uint8_t> data(4099);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 7);
  const uint32_t whole = Crc32c(0, data.data(), data.size());
  for (size_t split : {0ul, 1ul, 7ul, 8ul, 4096ul, 4099ul}) {
    uint32_t part = Crc32c(0, data.data(), split);
    part = Crc32c(part, data.data() + split, data.size() - split);
    EXPECT_EQ(part, whole) << "split at " << split;
  }
}

TEST(Crc32cTest, OneFlippedBitChangesTheSum) {
  std::vector<uint8_t> data(1 << 16, 0x5a);
  const uint32_t before = Crc32c(0, data.data(), data.size());
  data[12345] ^= 0x10;
  EXPECT_NE(Crc32c(0, data.data(), data.size()), before);
}

}  // namespace
}  // namespace fgds::remote
