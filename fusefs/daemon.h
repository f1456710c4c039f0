// File: fusefs/daemon.h
//
// The lifecycle of one mount: checks with clear errors, mounting, serving
// on many threads, and a clean unmount on SIGTERM/SIGINT/SIGHUP or on
// `fgds umount`.
#ifndef FGDS_FUSEFS_DAEMON_H_
#define FGDS_FUSEFS_DAEMON_H_

#include <functional>

#include "absl/status/status.h"
#include "fusefs/options.h"

namespace fgds::fusefs {

// Checks what commonly goes wrong before anything starts, with a message
// naming the problem: not root, /dev/fuse missing, mountpoint or backing
// directory missing, already mounted, one inside the other. A stale mount
// left by a killed daemon (ENOTCONN) is detached here, so a restart needs no
// manual cleanup. Makes both paths absolute; creates the default backing
// directory if it is missing.
absl::Status PrepareMount(DaemonOptions& options);

// Mounts and serves until unmounted or signalled. Calls `ready` exactly once:
// with OK once the mount is live, or with the error that stopped it.
// SIGTERM, SIGINT or SIGHUP at any point, start-up included, ends it in
// bounded time with the mount gone: nothing waits on the mount or on the
// FUSE loop (tests/integration/startup_signal_test.cc; the test hook
// FGDS_TEST_STOP_AT is described in daemon.cc).
absl::Status ServeMount(const DaemonOptions& options,
                        const std::function<void(const absl::Status&)>& ready);

// Unmounts `mountpoint` (lazily with `lazy`: open files stay usable and the
// daemon exits after the last one closes).
absl::Status Unmount(const std::string& mountpoint, bool lazy);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_DAEMON_H_
