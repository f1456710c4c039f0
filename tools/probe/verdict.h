// File: tools/probe/verdict.h
//
// The last line of `fgds probe` and its exit status.
#ifndef FGDS_TOOLS_PROBE_VERDICT_H_
#define FGDS_TOOLS_PROBE_VERDICT_H_

#include <string>
#include <vector>

#include "tools/probe/check.h"

namespace fgds::probe {

enum class VerdictKind {
  kAvailable,     // the direct path can work: exit status 0
  kBounceOnly,    // a GPU and its driver work, but not the direct path: 1
  kNotAvailable,  // neither path: no usable NVIDIA GPU: 1
};

struct Verdict {
  VerdictKind kind = VerdictKind::kNotAvailable;
  // Why the direct path cannot work: "<name>: <finding>" of each blocking
  // failure, in check order.
  std::vector<std::string> reasons;
  int exit_status = 1;
};

// Decide: available when no check blocks the direct path. A failed
// ungrouped check blocks it; a group blocks it when it has checked
// (not kSkip) members and none of them is ok or warn. `gpu_usable` (an NVIDIA
// GPU with its driver loaded, so libfgds's bounce engine can run) separates
// kBounceOnly from kNotAvailable.
Verdict Decide(const std::vector<Check>& checks, bool gpu_usable);

// VerdictLine renders "direct path: AVAILABLE", "bounce path only
// (direct path NOT AVAILABLE: r1; r2)" or "direct path: NOT AVAILABLE
// (r1; r2)".
std::string VerdictLine(const Verdict& verdict);

// VerdictName: "available", "bounce_only", "not_available" (--json).
std::string VerdictName(VerdictKind kind);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_VERDICT_H_
