// File: dropin/hf3fs/mounts.h
//
// FGDS mounts as the hf3fs drop-in sees them: finding the mount that holds
// a path, and one usrbio session per mount and process, shared by every
// iov, ior and registered fd of that mount (3FS's calls name a mount point
// each; FGDS's usrbio names a session).
//
// Thread safety: all functions may be called from any thread.
#ifndef FGDS_DROPIN_HF3FS_MOUNTS_H_
#define FGDS_DROPIN_HF3FS_MOUNTS_H_

#include <string>

#include "fgds/usrbio.h"

namespace fgds::hf3fs {

// MountRootOf returns the root of the FGDS mount holding `path` (the top
// directory of its file system, with a /.fgds/session file), or "" when
// `path` is on no FGDS mount.
std::string MountRootOf(const std::string& path);

// AcquireSession returns the session of the mount holding `path`, opening
// it on first use, or null with *error set (-ENOTSUP: not an FGDS mount,
// or what fgds_session_open said). Each acquire is paired with a
// ReleaseSession; the last release closes the session.
fgds_session* AcquireSession(const char* path, int* error);
void ReleaseSession(fgds_session* session);

}  // namespace fgds::hf3fs

#endif  // FGDS_DROPIN_HF3FS_MOUNTS_H_
