// File: usrbio/cuda/cuda_error.h
//
// CUresult to errno, in one table (STYLE.md 7: data-path results are -errno
// ints, and the C API must pick the errno a caller can act on).
#ifndef FGDS_USRBIO_CUDA_CUDA_ERROR_H_
#define FGDS_USRBIO_CUDA_CUDA_ERROR_H_

#include <string>
#include <string_view>

#include "usrbio/cuda/cuda_types.h"

namespace fgds::cuda {

struct CudaApi;

// CuResultToErrno returns the positive errno for `result` (0 for
// CUDA_SUCCESS, EIO for anything the table does not name).
int CuResultToErrno(CUresult result);

// CuResultText names `result` for a message: "CUDA_ERROR_NO_DEVICE (no
// CUDA-capable device is detected)" through the driver's own strings when
// `api` is given, else "CUresult 100".
std::string CuResultText(const CudaApi* api, CUresult result);

// CuFailure returns -CuResultToErrno(result) and, when `message` is not
// null, sets it to "<what>: <CuResultText>". REQUIRES: result != 0.
int CuFailure(const CudaApi* api, CUresult result, std::string_view what,
              std::string* message);

}  // namespace fgds::cuda

#endif  // FGDS_USRBIO_CUDA_CUDA_ERROR_H_
