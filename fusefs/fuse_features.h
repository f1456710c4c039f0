// File: fusefs/fuse_features.h
//
// The FUSE features a mount asks for beyond libfuse 3.14's (passthrough,
// FUSE over io_uring), whether each is on, and why not: decided in two
// steps, before mounting (libfuse, options, backend, the fuse module's
// parameters) and at INIT (what the kernel offers). `fgds mount` logs the
// result and /.fgds/stats shows it (Describe).
#ifndef FGDS_FUSEFS_FUSE_FEATURES_H_
#define FGDS_FUSEFS_FUSE_FEATURES_H_

#include <fuse_lowlevel.h>

#include <string>

#include "fusefs/options.h"

namespace fgds::fusefs {

struct Filesystem;

// One feature: on, or off and why ("" while undecided).
struct FeatureState {
  bool on = false;
  std::string why_off;
};

// "3.18.3 (built with 3.18)": the libfuse the daemon runs on, and the one
// it was compiled against.
std::string LibfuseVersion();

// Before mounting: why passthrough cannot be asked for, or "" if it can.
// `local_files`: the backend keeps file data in local files.
std::string PassthroughBlocker(const DaemonOptions& options, bool local_files);

// Before mounting: why FUSE over io_uring cannot be asked for, or "".
// `local_backend`: requests end in local system calls (auto uses rings
// only then). `enable_uring_path` is the fuse module's parameter (tests
// pass another).
std::string FuseUringBlocker(
    const DaemonOptions& options, bool local_backend,
    const char* enable_uring_path = "/sys/module/fuse/parameters/enable_uring");

// "libfuse 3.18.3 (built with 3.18); passthrough on; fuse-uring off: ..."
std::string DescribeFeatures(const FeatureState& passthrough,
                             const FeatureState& fuse_uring);

// In init: asks the kernel for what the blockers allow and it offers, and
// records which features are on (Filesystem's states).
void NegotiateFeatures(Filesystem& fs, fuse_conn_info* conn);

// Counts `req` as one that came through io_uring or through /dev/fuse.
void CountTransport(Filesystem& fs, fuse_req_t req);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_FUSE_FEATURES_H_
