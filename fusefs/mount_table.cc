#include "fusefs/mount_table.h"

#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace fgds::fusefs {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(absl::string_view in) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\\' && i + 3 < in.size() && octal(in[i + 1]) &&
        octal(in[i + 2]) && octal(in[i + 3])) {
      out.push_back(static_cast<char>(
          (in[i + 1] - '0') * 64 + (in[i + 2] - '0') * 8 + (in[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

}  // namespace

std::optional<MountInfo> ParseMountInfoLine(absl::string_view line) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  // id parent major:minor root mountpoint options [optional...] - fstype ...
  if (fields.size() < 8) return std::nullopt;
  MountInfo info;
  std::vector<absl::string_view> dev = absl::StrSplit(fields[2], ':');
  if (dev.size() != 2 || !absl::SimpleAtoi(dev[0], &info.major) ||
      !absl::SimpleAtoi(dev[1], &info.minor)) {
    return std::nullopt;
  }
  info.mountpoint = Unescape(fields[4]);
  for (size_t i = 6; i + 1 < fields.size(); ++i) {
    if (fields[i] == "-") {
      info.fstype = std::string(fields[i + 1]);
      return info;
    }
  }
  return std::nullopt;
}

std::optional<MountInfo> FindMount(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::optional<MountInfo> found;
  std::string line;
  while (std::getline(in, line)) {
    auto info = ParseMountInfoLine(line);
    if (info && info->mountpoint == mountpoint) found = std::move(info);
  }
  return found;
}

std::optional<MountInfo> StillOurMount(const std::string& mountpoint,
                                       const std::optional<MountInfo>& own) {
  if (!own) return std::nullopt;
  std::optional<MountInfo> now = FindMount(mountpoint);
  if (!now || now->major != own->major || now->minor != own->minor) {
    return std::nullopt;
  }
  return now;
}

}  // namespace fgds::fusefs
