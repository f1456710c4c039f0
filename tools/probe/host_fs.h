// File: tools/probe/host_fs.h
//
// Read-only access to the host's /sys, /proc, /boot, /lib/modules and /dev
// below a root directory, so that `fgds probe --sysfs-root DIR` can be run
// against a fake tree in tests. Paths given to HostFs are absolute as seen
// on the host ("/sys/bus/pci/devices"); HostFs prefixes the root.
//
// Thread safety: immutable after construction.
#ifndef FGDS_TOOLS_PROBE_HOST_FS_H_
#define FGDS_TOOLS_PROBE_HOST_FS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgds::probe {

class HostFs {
 public:
  // `root` is "/" for the real host, or a directory holding a fake tree.
  explicit HostFs(std::string root);

  // Path returns `host_path` below the root, for open(2) and stat(2).
  std::string Path(absl::string_view host_path) const;

  // Read returns the whole file (sysfs attributes, /proc files).
  absl::StatusOr<std::string> Read(absl::string_view host_path) const;

  // ReadLine returns the first line of the file without trailing
  // whitespace, or `fallback` when it cannot be read.
  std::string ReadLine(absl::string_view host_path,
                       absl::string_view fallback = "") const;

  // List returns the names in a directory, sorted, without "." and "..".
  absl::StatusOr<std::vector<std::string>> List(
      absl::string_view host_path) const;

  bool Exists(absl::string_view host_path) const;

  // RealPath resolves every symlink (readlink -f) and returns the result
  // as a host path, i.e. without the root. A fake tree must use relative
  // links that stay inside it.
  absl::StatusOr<std::string> RealPath(absl::string_view host_path) const;

  const std::string& root() const { return root_; }

 private:
  std::string root_;  // without a trailing slash; "" for "/"
};

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_HOST_FS_H_
