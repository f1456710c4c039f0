// File: tools/probe/probe.h
//
// `fgds probe`: a read-only check of whether the GPU direct path (NVMe DMA
// straight into GPU memory through the fgds kernel module) can work on
// this host, and why not. Example:
//
//   fgds::probe::HostFs fs("/");
//   fgds::probe::ProbeReport report = fgds::probe::RunProbe(fs);
//   std::fputs(fgds::probe::FormatText(report).c_str(), stdout);
//   return report.verdict.exit_status;  // 0: direct path available
#ifndef FGDS_TOOLS_PROBE_PROBE_H_
#define FGDS_TOOLS_PROBE_PROBE_H_

#include <string>
#include <vector>

#include "tools/probe/check.h"
#include "tools/probe/checks.h"
#include "tools/probe/host_fs.h"
#include "tools/probe/verdict.h"

namespace fgds::probe {

struct ProbeReport {
  std::string root;           // the --sysfs-root it ran against
  std::vector<Check> checks;  // in print order
  Verdict verdict;
};

// RunProbe runs every check against `fs`. It changes nothing on the host;
// it opens /dev/fgds_* read-write and NVMe block devices read-only to
// issue FGDS_IOCTL_QUERY through `query`.
ProbeReport RunProbe(const HostFs& fs, const QueryFn& query = IoctlQuery);

// FormatText renders one line per check, a hint line under each one that
// is not ok, and the verdict.
std::string FormatText(const ProbeReport& report);

// FormatJson renders {"root", "checks": [{"name", "level", "finding",
// "hint", "group"}], "verdict", "reasons", "exit_status"}.
std::string FormatJson(const ProbeReport& report);

// ProbeMain is `fgds probe [--json] [--sysfs-root DIR]`: argv[0] is
// "probe". Returns the exit status: 0 direct path available, 1 not, 2
// usage error.
int ProbeMain(int argc, char** argv);

}  // namespace fgds::probe

#endif  // FGDS_TOOLS_PROBE_PROBE_H_
