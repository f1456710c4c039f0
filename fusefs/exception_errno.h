// File: fusefs/exception_errno.h
//
// The errno a FUSE request fails with when its handler throws. No exception
// may cross a libfuse callback (STYLE.md 8): libfuse is C, and an exception
// unwinding through its loop ends the daemon, and with it the mount, for
// every user. So the operation table (ops_table.cc) catches whatever a
// handler throws and replies with this errno instead: a shortage of memory
// or of another resource fails that one request.
#ifndef FGDS_FUSEFS_EXCEPTION_ERRNO_H_
#define FGDS_FUSEFS_EXCEPTION_ERRNO_H_

#include <exception>

namespace fgds::fusefs {

// std::bad_alloc (and std::bad_array_new_length): ENOMEM. std::system_error
// of the generic or system category: its errno (EMFILE when threads or
// descriptors ran out, EAGAIN...). Anything else: EIO.
int ExceptionErrno(const std::exception_ptr& exception) noexcept;

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_EXCEPTION_ERRNO_H_
