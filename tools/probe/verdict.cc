#include "tools/probe/verdict.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fgds::probe {

Verdict Decide(const std::vector<Check>& checks, bool gpu_usable) {
  Verdict verdict;
  // group -> whether any member passed; insertion order for the reasons.
  std::vector<std::string> groups;
  std::map<std::string, bool> group_passed;
  for (const Check& check : checks) {
    if (!check.group.empty()) {
      // A member that could not be checked neither passes nor fails.
      if (check.level == Level::kSkip) continue;
      auto [it, inserted] = group_passed.emplace(check.group, false);
      if (inserted) groups.push_back(check.group);
      if (check.level == Level::kOk || check.level == Level::kWarn) {
        it->second = true;
      }
      continue;
    }
    if (check.level == Level::kFail) {
      verdict.reasons.push_back(absl::StrCat(check.name, ": ", check.finding));
    }
  }
  for (const std::string& group : groups) {
    if (!group_passed[group]) {
      verdict.reasons.push_back(absl::StrCat(group, ": none passes"));
    }
  }
  if (verdict.reasons.empty()) {
    verdict.kind = VerdictKind::kAvailable;
    verdict.exit_status = 0;
  } else {
    verdict.kind =
        gpu_usable ? VerdictKind::kBounceOnly : VerdictKind::kNotAvailable;
    verdict.exit_status = 1;
  }
  return verdict;
}

std::string VerdictLine(const Verdict& verdict) {
  std::string reasons = absl::StrJoin(verdict.reasons, "; ");
  switch (verdict.kind) {
    case VerdictKind::kAvailable:
      return "direct path: AVAILABLE";
    case VerdictKind::kBounceOnly:
      return absl::StrCat(
          "bounce path only (direct path NOT AVAILABLE: ", reasons, ")");
    case VerdictKind::kNotAvailable:
      break;
  }
  return absl::StrCat("direct path: NOT AVAILABLE (", reasons, ")");
}

std::string VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kAvailable:
      return "available";
    case VerdictKind::kBounceOnly:
      return "bounce_only";
    case VerdictKind::kNotAvailable:
      break;
  }
  return "not_available";
}

}  // namespace fgds::probe
