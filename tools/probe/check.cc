#include "tools/probe/check.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace fgds::probe {

absl::string_view Tag(Level level) {
  switch (level) {
    case Level::kOk:
      return "[ ok ]";
    case Level::kWarn:
      return "[warn]";
    case Level::kFail:
      return "[FAIL]";
    case Level::kSkip:
      return "[ -- ]";
  }
  return "[ ?? ]";
}

absl::string_view LevelName(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "fail";
    case Level::kSkip:
      return "skip";
  }
  return "unknown";
}

Check Fold(std::string name, const std::vector<Check>& members,
           const std::vector<std::string>& labels) {
  assert(!members.empty() && labels.size() == members.size());
  constexpr Level kOrder[] = {Level::kOk, Level::kWarn, Level::kFail,
                              Level::kSkip};
  Check folded;
  folded.name = std::move(name);
  folded.group = members[0].group;
  bool have_best = false;
  for (Level level : kOrder) {
    std::string list;
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].level != level) continue;
      absl::StrAppend(&list, list.empty() ? "" : " ", labels[i]);
      if (!have_best) {
        have_best = true;
        folded.level = level;
        folded.hint = members[i].hint;
      }
    }
    if (list.empty()) continue;
    absl::StrAppend(&folded.finding, folded.finding.empty() ? "" : "; ",
                    LevelName(level), ": ", list);
  }
  return folded;
}

}  // namespace fgds::probe
