// File: fusefs/control_dir.h
//
// The hidden control directory /.fgds at the mount root: not listed by
// readdir, not creatable, renamable or removable by anyone, but reachable by
// name. It holds read-only virtual files; today `stats`. Their node ids are
// below backend::kFirstNodeId, which no backend hands out.
#ifndef FGDS_FUSEFS_CONTROL_DIR_H_
#define FGDS_FUSEFS_CONTROL_DIR_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

namespace fgds::fusefs {

inline constexpr absl::string_view kControlDirName = ".fgds";
inline constexpr uint64_t kControlDirNode = 2;
inline constexpr uint64_t kStatsNode = 3;
inline constexpr uint64_t kLastControlNode = 3;

inline bool IsControlNode(uint64_t node) {
  return node >= kControlDirNode && node <= kLastControlNode;
}

// True for a name under the mount root that belongs to the control
// directory (so users can neither create nor remove it).
bool IsReservedName(uint64_t parent, const char* name);

// Attributes of a control node (owned by root, read-only).
struct stat ControlAttr(uint64_t node);

// The control node `name` under `parent`, or 0 if there is none.
uint64_t ControlLookup(uint64_t parent, const char* name);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_CONTROL_DIR_H_
