// File: common/errno_status.h
//
// The one place where errno values and absl::Status meet (DESIGN.md,
// "Errors and limits"). Setup and control paths speak absl::Status; the data
// path and every FUSE reply speak -errno ints, because POSIX callers need the
// exact errno and a Status code cannot carry it back losslessly.
#ifndef FGDS_COMMON_ERRNO_STATUS_H_
#define FGDS_COMMON_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace fgds {

// PosixError returns a Status for a failed system call: `context` names the
// call and its object (e.g. "open /var/lib/fgds/data"), `err` is errno.
// The errno survives as a payload, so StatusToErrno gives it back exactly.
absl::Status PosixError(absl::string_view context, int err);

// StatusToErrno returns the positive errno for a non-OK status: the exact one
// if the status came from PosixError, else the closest one for its code
// (table in errno_status.cc). Returns 0 for OK.
int StatusToErrno(const absl::Status& status);

}  // namespace fgds

#endif  // FGDS_COMMON_ERRNO_STATUS_H_
