// File: dropin/cufile/guard.h
//
// No exception crosses the extern "C" edge (STYLE.md 8): each cuFile entry
// point runs its body through Guard, which turns one into
// CU_FILE_INTERNAL_ERROR (or the ssize_t form for cuFileRead/Write).
#ifndef FGDS_DROPIN_CUFILE_GUARD_H_
#define FGDS_DROPIN_CUFILE_GUARD_H_

#include <sys/types.h>

#include <cerrno>

#include "dropin/cufile/error_map.h"

namespace fgds::cufile {

template <typename Body>
CUfileError_t Guard(Body body) noexcept {
  try {
    return body();
  } catch (...) {
    return Status(CU_FILE_INTERNAL_ERROR);
  }
}

template <typename Body>
ssize_t GuardIo(Body body) noexcept {
  try {
    return body();
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_GUARD_H_
