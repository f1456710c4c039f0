#include "dropin/cufile/error_map.h"

#include <cerrno>

namespace fgds::cufile {

CUfileOpError OpErrorOf(int negative_errno) {
  switch (-negative_errno) {
    case ENODEV:
      return CU_FILE_CUDA_DRIVER_ERROR;
    case ENOTSUP:
      return CU_FILE_DEVICE_NOT_SUPPORTED;
    case EFAULT:
      return CU_FILE_CUDA_POINTER_INVALID;
    case EINVAL:
      return CU_FILE_INVALID_VALUE;
    case EEXIST:
      return CU_FILE_MEMORY_ALREADY_REGISTERED;
    default:
      return CU_FILE_SUCCESS;
  }
}

ssize_t IoReturn(ssize_t result) {
  if (result >= 0) return result;
  const CUfileOpError op_error = OpErrorOf(static_cast<int>(result));
  if (op_error != CU_FILE_SUCCESS) return -static_cast<ssize_t>(op_error);
  errno = static_cast<int>(-result);
  return -1;
}

CUfileError_t StatusOf(int negative_errno, CUresult cu_err) {
  if (negative_errno == 0) return Ok();
  const CUfileOpError op_error = OpErrorOf(negative_errno);
  if (op_error != CU_FILE_SUCCESS) return Status(op_error, cu_err);
  return Status(CU_FILE_INTERNAL_ERROR, cu_err);
}

}  // namespace fgds::cufile
