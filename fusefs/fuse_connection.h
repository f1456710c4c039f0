// File: fusefs/fuse_connection.h
//
// The kernel's side of a FUSE mount, as its control file system (fusectl,
// /sys/fs/fuse/connections/N) shows it. The daemon aborts its own
// connection when its loop has stopped on a signal: requests the kernel
// still waits for would never be answered, and a thread of the daemon that
// waits on one (a usrbio write's page-cache invalidation waiting for a
// page's write-back, cache_invalidator.h) would sleep uninterruptibly and
// hold the daemon's exit with it.
#ifndef FGDS_FUSEFS_FUSE_CONNECTION_H_
#define FGDS_FUSEFS_FUSE_CONNECTION_H_

#include <string>

namespace fgds::fusefs {

// "/sys/fs/fuse/connections/N" for the mount whose device is major:minor
// (mountinfo's numbers; the kernel names the directory after its own
// encoding of the device, major << 20 | minor).
std::string FuseConnectionDir(unsigned major, unsigned minor);

// Aborts that connection: every request in flight or to come ends with an
// error (ECONNABORTED), as when the daemon's last descriptor of it closes.
// Returns 0 or -errno (ENOENT where fusectl is not mounted).
int AbortFuseConnection(unsigned major, unsigned minor);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_FUSE_CONNECTION_H_
