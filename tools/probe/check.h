// File: tools/probe/check.h
//
// One line of `fgds probe`: a named check, its level, what was found and,
// for anything not ok, why it matters and how to fix it.
#ifndef FGDS_TOOLS_PROBE_CHECK_H_
#define FGDS_TOOLS_PROBE_CHECK_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace fgds::probe {

// Level of a check, printed as [ ok ], [warn], [FAIL] or [ -- ].
enum class Level {
  kOk,    // fine for the direct path
  kWarn,  // may work; the hint says what to watch
  kFail,  // the direct path cannot work while this holds
  kSkip,  // not checked or not applicable (unknown, depends on a failure)
};

// Tag returns the four-character bracketed tag of `level`: "[ ok ]".
absl::string_view Tag(Level level);

// LevelName returns "ok", "warn", "fail" or "skip" (the --json spelling).
absl::string_view LevelName(Level level);

struct Check {
  std::string name;  // short, stable: "kernel", "CONFIG_ZONE_DEVICE"
  Level level = Level::kSkip;
  std::string finding;  // what was found, one line
  std::string hint;     // why/fix, one line; empty when ok
  // Checks sharing a nonempty group are alternatives (one line per
  // GPU x NVMe pair): the group blocks the direct path only when none of
  // its members passes. Ungrouped failures always block it.
  std::string group;
};

inline Check MakeCheck(std::string name, Level level, std::string finding,
                       std::string hint = "") {
  Check check;
  check.name = std::move(name);
  check.level = level;
  check.finding = std::move(finding);
  check.hint = std::move(hint);
  return check;
}

// Above this many GPU x NVMe pairs (a DGX has 8 x 8), pair checks are
// folded into one line per GPU so that the report stays one screen.
inline constexpr size_t kMaxPairLines = 16;

// Fold returns one line named `name` standing for `members` (same group,
// one subject, e.g. every route from one GPU; `labels[i]` names member i,
// e.g. "nvme0"). Its level is the best member's (ok, warn, FAIL, then
// --), its finding lists the labels by level ("ok: nvme0 nvme1; FAIL:
// nvme2"), its hint is that of the first member at the best level.
// REQUIRES: members nonempty, labels.size() == members.size().
Check Fold(std::string name, const std::vector<Check>& members,
           const std::vector<std::string>& labels);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_CHECK_H_
