// Unit tests for the pure parts of `fgds bench`: flags, statistics, block
// order and stamps, ratios and output formatting. The I/O engines are
// exercised by running the bench itself (see the report in tools/bench).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tools/bench/block_order.h"
#include "tools/bench/flags.h"
#include "tools/bench/json.h"
#include "tools/bench/result_row.h"
#include "tools/bench/stats.h"
#include "tools/bench/table.h"

namespace fgds::bench {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = kKiB * 1024;
constexpr uint64_t kGiB = kMiB * 1024;

TEST(ParseSizeTest, AcceptsSuffixes) {
  const struct {
    const char* text;
    uint64_t want;
  } kCases[] = {
      {"4096", 4096},
      {"4k", 4 * kKiB},
      {"4K", 4 * kKiB},
      {"256M", 256 * kMiB},
      {"4G", 4 * kGiB},
      {"1T", 1024 * kGiB},
      {"64KiB", 64 * kKiB},
      {"1MB", kMiB},
      {"1mb", kMiB},
      {"2gib", 2 * kGiB},
      {"16777215T", uint64_t{16777215} * 1024 * kGiB},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<uint64_t> got = ParseSize(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseSizeTest, RejectsNonSizes) {
  for (const char* text :
       {"", "0", "0K", "k", "1.5G", "-1", "+1", "4X", "4KX", "4 K",
        "99999999999999999999", "17179869184G", "16777216T"}) {
    EXPECT_FALSE(ParseSize(text).ok()) << "'" << text << "'";
  }
}

TEST(FormatSizeTest, LargestExactSuffix) {
  EXPECT_EQ(FormatSize(kMiB), "1M");
  EXPECT_EQ(FormatSize(4 * kKiB), "4K");
  EXPECT_EQ(FormatSize(3 * kGiB), "3G");
  EXPECT_EQ(FormatSize(1536 * kMiB), "1536M");
  EXPECT_EQ(FormatSize(1000), "1000");
  EXPECT_EQ(FormatSize(1536), "1536");
}

std::vector<std::string> Args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--mount", "/m", "--backing", "/b"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(ParseBenchFlagsTest, Defaults) {
  absl::StatusOr<BenchOptions> options = ParseBenchFlags(Args({}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->mount, "/m");
  EXPECT_EQ(options->backing, "/b");
  EXPECT_EQ(options->size, 4 * kGiB);
  EXPECT_EQ(options->block_size, kMiB);
  EXPECT_EQ(options->queue_depth, 32);
  EXPECT_EQ(options->threads, 1);
  EXPECT_EQ(options->pattern, Pattern::kSeq);
  EXPECT_EQ(options->cache, CacheMode::kCold);
  EXPECT_EQ(options->modes,
            (std::vector<std::string>{"posix", "native", "native-direct"}));
  EXPECT_TRUE(options->json_path.empty());
  EXPECT_TRUE(options->mount_check);
  EXPECT_FALSE(options->help);
}

TEST(ParseBenchFlagsTest, BothValueForms) {
  absl::StatusOr<BenchOptions> options = ParseBenchFlags(
      Args({"--size=256M", "--bs", "4k", "--qd=8", "--threads", "4",
            "--pattern", "rand", "--cache=both", "--modes", "native,posix",
            "--json", "out.json", "--no-mount-check"}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->size, 256 * kMiB);
  EXPECT_EQ(options->block_size, 4 * kKiB);
  EXPECT_EQ(options->queue_depth, 8);
  EXPECT_EQ(options->threads, 4);
  EXPECT_EQ(options->pattern, Pattern::kRand);
  EXPECT_EQ(options->cache, CacheMode::kBoth);
  EXPECT_EQ(options->modes, (std::vector<std::string>{"native", "posix"}));
  EXPECT_EQ(options->json_path, "out.json");
  EXPECT_FALSE(options->mount_check);
}

TEST(ParseBenchFlagsTest, HelpNeedsNothingElse) {
  absl::StatusOr<BenchOptions> options = ParseBenchFlags({"--help"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->help);
  EXPECT_TRUE(ParseBenchFlags({"-h"})->help);
}

// Every rejection names the flag the user has to fix.
TEST(ParseBenchFlagsTest, ErrorsNameTheFlag) {
  const struct {
    std::vector<std::string> args;
    const char* want;
  } kCases[] = {
      {{"--backing", "/b"}, "--mount: missing"},
      {{"--mount", "/m"}, "--backing: missing"},
      {Args({"--frobnicate", "1"}), "unknown flag '--frobnicate'"},
      {Args({"--size"}), "--size: needs a value"},
      {Args({"--size="}), "--size: needs a non-empty value"},
      {Args({"--size", "lots"}), "--size: 'lots' is not a size"},
      {Args({"--bs", "1.5M"}), "--bs: '1.5M' is not a size"},
      {Args({"--bs", "256"}), "--bs: must be from 512 to 1G"},
      {Args({"--bs", "2G"}), "--bs: must be from 512 to 1G"},
      {Args({"--bs", "1000", "--modes", "native-direct"}),
       "--bs: 1000 is not a multiple of 4096, which mode 'native-direct'"},
      {Args({"--threads", "0"}), "--threads: '0' is not a whole number"},
      {Args({"--threads", "two"}), "--threads: 'two' is not a whole number"},
      {Args({"--qd", "5000"}), "--qd: '5000' is not a whole number"},
      {Args({"--pattern", "zigzag"}), "--pattern: 'zigzag' is not seq or rand"},
      {Args({"--cache", "hot"}), "--cache: 'hot' is not cold, warm or both"},
      {Args({"--modes", "posix,bogus"}), "--modes: unknown mode 'bogus'"},
      {Args({"--modes", "posix,,native"}), "--modes: has an empty mode name"},
      {Args({"--modes", "posix,posix"}), "--modes: mode 'posix' repeated"},
      {Args({"--size", "1M", "--threads", "2"}),
       "--size: 1M is less than --bs 1M times --threads 2"},
      {Args({"stray"}), "unexpected argument 'stray'"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<BenchOptions> options = ParseBenchFlags(c.args);
    ASSERT_FALSE(options.ok()) << c.want;
    EXPECT_NE(options.status().message().find(c.want), std::string::npos)
        << "got: " << options.status().message() << "\nwant: " << c.want;
  }
}

TEST(ParseBenchFlagsTest, UnalignedBlockSizeIsFineWithoutDirectMode) {
  absl::StatusOr<BenchOptions> options =
      ParseBenchFlags(Args({"--bs", "1000", "--modes", "posix,native"}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->block_size, 1000u);
}

TEST(RegionBytesTest, WholeBlocksPerThread) {
  BenchOptions options;
  options.size = 256 * kMiB;
  options.block_size = kMiB;
  options.threads = 3;
  EXPECT_EQ(RegionBytes(options), 85 * kMiB);  // 85.33 MiB rounded down
  options.threads = 1;
  EXPECT_EQ(RegionBytes(options), 256 * kMiB);
}

TEST(LatencyHistogramTest, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.Percentile(0.50), 50u);
  EXPECT_EQ(h.Percentile(0.99), 99u);
  EXPECT_EQ(h.Percentile(1.0), 100u);
  EXPECT_EQ(h.Percentile(0.0), 1u);  // at least the first sample
}

TEST(LatencyHistogramTest, LargeValuesWithinOneBucket) {
  LatencyHistogram h;
  // 1 us .. 10 ms in 1 us steps.
  for (uint64_t v = 1000; v <= 10000000; v += 1000) h.Record(v);
  const struct {
    double fraction;
    double exact;
  } kCases[] = {{0.5, 5000000}, {0.99, 9900000}, {0.01, 100000}};
  for (const auto& c : kCases) {
    const double got = static_cast<double>(h.Percentile(c.fraction));
    EXPECT_GE(got, c.exact) << c.fraction;  // upper bound of the bucket
    EXPECT_LE(got, c.exact * (1 + 1.0 / 64)) << c.fraction;
  }
}

TEST(LatencyHistogramTest, NeverAboveTheLargestSample) {
  LatencyHistogram h;
  h.Record(1000001);
  EXPECT_EQ(h.Percentile(0.5), 1000001u);
  h.Record(uint64_t{1} << 63);  // the last bucket must not overflow
  EXPECT_EQ(h.Percentile(1.0), uint64_t{1} << 63);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingBoth) {
  LatencyHistogram a, b, both;
  for (uint64_t v = 0; v < 5000; ++v) {
    (v % 3 == 0 ? a : b).Record(v * 37);
    both.Record(v * 37);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.max(), both.max());
  for (double f : {0.1, 0.5, 0.9, 0.99, 1.0}) {
    EXPECT_EQ(a.Percentile(f), both.Percentile(f)) << f;
  }
}

TEST(BlockOrderTest, SequentialIsAscending) {
  BlockOrder order(Pattern::kSeq, 10, 1);
  ASSERT_EQ(order.size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(order[i], i);
}

TEST(BlockOrderTest, RandomVisitsEveryBlockOnce) {
  BlockOrder order(Pattern::kRand, 1000, 42);
  std::set<uint64_t> seen;
  bool moved = false;
  for (uint64_t i = 0; i < order.size(); ++i) {
    seen.insert(order[i]);
    moved |= order[i] != i;
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(*seen.rbegin(), 999u);
  EXPECT_TRUE(moved);
}

TEST(BlockOrderTest, RandomIsReproducibleAndSeeded) {
  BlockOrder a(Pattern::kRand, 100, 7), b(Pattern::kRand, 100, 7),
      c(Pattern::kRand, 100, 8);
  bool differs = false;
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(a[i], b[i]);
    differs |= a[i] != c[i];
  }
  EXPECT_TRUE(differs);
}

TEST(BlockStampTest, DetectsWrongOffsetTagAndTail) {
  std::vector<char> block(4096);
  FillBlockData(block.data(), block.size(), 1);
  StampBlock(block.data(), block.size(), 8192, 77);
  EXPECT_TRUE(CheckBlock(block.data(), block.size(), 8192, 77));
  EXPECT_FALSE(CheckBlock(block.data(), block.size(), 4096, 77));
  EXPECT_FALSE(CheckBlock(block.data(), block.size(), 8192, 78));
  block[block.size() - 1] ^= 1;
  EXPECT_FALSE(CheckBlock(block.data(), block.size(), 8192, 77));
}

TEST(BlockDataTest, NotZeroAndSeedDependent) {
  std::vector<char> a(1001), b(1001);
  FillBlockData(a.data(), a.size(), 1);
  FillBlockData(b.data(), b.size(), 2);
  EXPECT_NE(a, b);
  EXPECT_NE(std::count(a.begin(), a.end(), 0), 1001);
}

ResultRow Row(std::string mode, std::string op, std::string cache,
              std::string cache_wanted, double seconds) {
  ResultRow row;
  row.mode = std::move(mode);
  row.op = std::move(op);
  row.pattern = "seq";
  row.block_size = kMiB;
  row.cache = std::move(cache);
  row.cache_wanted = std::move(cache_wanted);
  row.bytes = 1000000000;
  row.ops = 1000;
  row.seconds = seconds;
  row.cpu_seconds = 0.25;
  row.p50_us = 12.5;
  row.p99_us = 100;
  return row;
}

absl::string_view PosixVsNative(absl::string_view mode) {
  return mode == "posix" ? "native" : mode == "usrbio" ? "native-direct" : "";
}

TEST(AttachRatiosTest, PairsSameOpAndWantedCache) {
  std::vector<ResultRow> rows = {
      Row("posix", "write", "-", "-", 2),       // 0.5 GB/s
      Row("posix", "read", "warm", "cold", 4),  // drop failed: really warm
      Row("posix", "read", "warm", "warm", 1),
      Row("native", "write", "-", "-", 1),
      Row("native", "read", "warm", "cold", 2),
      Row("native", "read", "warm", "warm", 0.5),
  };
  AttachRatios(rows, PosixVsNative);
  ASSERT_TRUE(rows[0].ratio.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].ratio, 0.5);
  EXPECT_EQ(rows[0].baseline, "native");
  EXPECT_DOUBLE_EQ(*rows[1].ratio, 0.5);
  EXPECT_DOUBLE_EQ(*rows[2].ratio, 0.5);
  for (int i = 3; i < 6; ++i) EXPECT_FALSE(rows[i].ratio.has_value()) << i;
}

TEST(AttachRatiosTest, DirectBaselinePairsWithAnyCache) {
  std::vector<ResultRow> rows = {
      Row("usrbio", "read", "cold", "cold", 1),
      Row("native-direct", "read", "direct", "direct", 2),
  };
  AttachRatios(rows, PosixVsNative);
  ASSERT_TRUE(rows[0].ratio.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].ratio, 2.0);
}

TEST(AttachRatiosTest, NoRatioWithoutBaselineRows) {
  std::vector<ResultRow> rows = {Row("posix", "read", "cold", "cold", 1)};
  AttachRatios(rows, PosixVsNative);
  EXPECT_FALSE(rows[0].ratio.has_value());
  EXPECT_TRUE(rows[0].baseline.empty());
}

TEST(FormatTableTest, AlignedColumnsAndValues) {
  std::vector<ResultRow> rows = {Row("posix", "write", "-", "-", 2),
                                 Row("native", "write", "-", "-", 1)};
  AttachRatios(rows, PosixVsNative);
  const std::string table = FormatTable(rows);
  std::vector<std::string> lines = absl::StrSplit(table, '\n');
  ASSERT_EQ(lines.size(), 4u);  // header, two rows, "" after the last \n
  EXPECT_EQ(lines[3], "");
  EXPECT_EQ(lines[0].rfind("mode", 0), 0u);
  // The last column is right-aligned, so every line has the same length.
  EXPECT_EQ(lines[0].size(), lines[1].size());
  EXPECT_EQ(lines[1].size(), lines[2].size());
  EXPECT_NE(lines[1].find("0.500"), std::string::npos);  // GB/s
  EXPECT_NE(lines[1].find(" 500 "), std::string::npos);  // IOPS
  EXPECT_NE(lines[1].find("12.5"), std::string::npos);   // p50 us
  EXPECT_NE(lines[1].find("0.250"), std::string::npos);  // CPU s/GB
  EXPECT_NE(lines[1].find("0.50x"), std::string::npos);
  EXPECT_EQ(lines[2].back(), '-');  // native has no baseline
}

TEST(JsonTest, RowsConfigAndNotes) {
  BenchOptions options;
  options.mount = "/m\"x";
  options.backing = "/b";
  std::vector<ResultRow> rows = {Row("posix", "write", "-", "-", 2),
                                 Row("native", "write", "-", "-", 1)};
  AttachRatios(rows, PosixVsNative);
  const std::string json = FormatJson(options, rows, {"note one"});
  EXPECT_NE(json.find("\"mount\": \"/m\\\"x\""), std::string::npos);
  EXPECT_NE(json.find("\"modes\": [\"posix\", \"native\", \"native-direct\"]"),
            std::string::npos);
  EXPECT_NE(json.find("\"gb_per_s\": 0.5,"), std::string::npos);
  EXPECT_NE(json.find("\"ratio\": 0.5, \"baseline\": \"native\""),
            std::string::npos);
  EXPECT_NE(json.find("\"ratio\": null, \"baseline\": null"),
            std::string::npos);
  EXPECT_NE(json.find("\"notes\": [\"note one\"]"), std::string::npos);
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'),
            std::count(json.begin(), json.end(), '}'));
}

}  // namespace
}  // namespace fgds::bench
