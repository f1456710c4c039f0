// File: dropin/cufile/error_map.h
//
// The one place where FGDS's -errno results become cuFile's conventions:
// CUfileError_t {err, cu_err} for the status-returning calls, and
// cuFileRead/cuFileWrite's ssize_t (bytes, -1 with errno for a system
// error, -CUfileOpError for a cuFile error).
#ifndef FGDS_DROPIN_CUFILE_ERROR_MAP_H_
#define FGDS_DROPIN_CUFILE_ERROR_MAP_H_

#include <sys/types.h>

#include "dropin/cufile/include/cufile.h"

namespace fgds::cufile {

inline CUfileError_t Status(CUfileOpError err, CUresult cu_err = 0) {
  CUfileError_t status;
  status.err = err;
  status.cu_err = cu_err;
  return status;
}

inline CUfileError_t Ok() { return Status(CU_FILE_SUCCESS); }

// OpErrorOf names the cuFile error for a -errno from libfgds or the GPU
// backend: CUDA unusable, not device memory, bad arguments. Errors of the
// file itself (EIO, EBADF, ENOSPC, ...) have no cuFile code: 0.
CUfileOpError OpErrorOf(int negative_errno);

// IoReturn turns a libfgds byte count or -errno into cuFileRead's return:
// bytes unchanged; a cuFile-coded error as -CUfileOpError; any other as -1
// with errno set.
ssize_t IoReturn(ssize_t result);

// StatusOf: CUfileError_t for a -errno (0 gives success); errors without a
// cuFile code of their own (ENOMEM, EIO) become CU_FILE_INTERNAL_ERROR.
CUfileError_t StatusOf(int negative_errno, CUresult cu_err = 0);

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_ERROR_MAP_H_
