#include "tools/probe/pci_resource.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fgds::probe {

absl::StatusOr<uint64_t> ParseHexNumber(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  uint64_t value;
  // simple_hex_atoi accepts an optional 0x prefix.
  if (s.empty() || !absl::SimpleHexAtoi(s, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a hex number: '", s, "'"));
  }
  return value;
}

absl::StatusOr<std::vector<PciResource>> ParseResourceFile(
    absl::string_view text) {
  std::vector<PciResource> resources;
  int index = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "resource line ", index, ": expected 3 fields: '", line, "'"));
    }
    PciResource r;
    r.index = index;
    absl::StatusOr<uint64_t> start = ParseHexNumber(fields[0]);
    absl::StatusOr<uint64_t> end = ParseHexNumber(fields[1]);
    absl::StatusOr<uint64_t> flags = ParseHexNumber(fields[2]);
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    if (!flags.ok()) return flags.status();
    r.start = *start;
    r.end = *end;
    r.flags = *flags;
    resources.push_back(r);
    ++index;
  }
  return resources;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    return absl::StrCat(static_cast<uint64_t>(value), " ", kUnits[unit]);
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace fgds::probe
