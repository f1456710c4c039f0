#include "tools/bench/table.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/flags.h"

namespace fgds::bench {
namespace {

struct Column {
  const char* header;
  bool numeric;  // right-aligned
};

constexpr std::array<Column, 13> kColumns = {{
    {"mode", false},
    {"op", false},
    {"pattern", false},
    {"bs", true},
    {"threads", true},
    {"qd", true},
    {"cache", false},
    {"GB/s", true},
    {"IOPS", true},
    {"p50 us", true},
    {"p99 us", true},
    {"CPU s/GB", true},
    {"vs base", true},
}};

std::array<std::string, kColumns.size()> Cells(const ResultRow& row) {
  return {
      row.mode,
      row.op,
      row.pattern,
      FormatSize(row.block_size),
      absl::StrCat(row.threads),
      absl::StrCat(row.queue_depth),
      row.cache,
      absl::StrFormat("%.3f", row.gb_per_second()),
      absl::StrFormat("%.0f", row.iops()),
      absl::StrFormat("%.1f", row.p50_us),
      absl::StrFormat("%.1f", row.p99_us),
      absl::StrFormat("%.3f", row.cpu_seconds_per_gb()),
      row.ratio.has_value() ? absl::StrFormat("%.2fx", *row.ratio) : "-",
  };
}

}  // namespace

std::string FormatTable(const std::vector<ResultRow>& rows) {
  std::vector<std::array<std::string, kColumns.size()>> lines;
  std::array<std::string, kColumns.size()> header;
  for (size_t c = 0; c < kColumns.size(); ++c) header[c] = kColumns[c].header;
  lines.push_back(header);
  for (const ResultRow& row : rows) lines.push_back(Cells(row));

  std::array<size_t, kColumns.size()> width{};
  for (const auto& line : lines) {
    for (size_t c = 0; c < kColumns.size(); ++c) {
      width[c] = std::max(width[c], line[c].size());
    }
  }
  std::string out;
  for (const auto& line : lines) {
    std::string text;
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (c > 0) text += "  ";
      const std::string pad(width[c] - line[c].size(), ' ');
      text += kColumns[c].numeric ? pad + line[c] : line[c] + pad;
    }
    // The last column may be left-aligned text in future; never leave
    // trailing blanks either way.
    text.erase(text.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, text, "\n");
  }
  return out;
}

}  // namespace fgds::bench
