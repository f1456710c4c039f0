// File: fusefs/mount_table.h
//
// Reads /proc/self/mountinfo, so the daemon can learn about a mount without
// touching it (a stat of its own mount from the daemon before it serves
// would wait on itself).
#ifndef FGDS_FUSEFS_MOUNT_TABLE_H_
#define FGDS_FUSEFS_MOUNT_TABLE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace fgds::fusefs {

struct MountInfo {
  unsigned major = 0;
  unsigned minor = 0;
  std::string mountpoint;  // unescaped
  std::string fstype;      // e.g. "fuse.fgds"
};

// Parses one line of mountinfo (proc(5)); nullopt if malformed.
std::optional<MountInfo> ParseMountInfoLine(absl::string_view line);

// The last (topmost) mount at exactly `mountpoint`, if any.
std::optional<MountInfo> FindMount(const std::string& mountpoint);

// The topmost mount at `mountpoint` if it is still `own` (the same device
// as when we mounted), else nullopt: after our unmount, another daemon may
// already be mounted at the same place.
std::optional<MountInfo> StillOurMount(const std::string& mountpoint,
                                       const std::optional<MountInfo>& own);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_MOUNT_TABLE_H_
