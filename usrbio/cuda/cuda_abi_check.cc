// Compile-time check of cuda_types.h against the installed cuda.h: every
// constant we declare must equal CUDA's, and the entry points we resolve by
// name must exist with the signatures CudaApi declares. Built only where
// cuda.h is present; linked into cuda_test so that it is compiled in CI.
#include <cuda.h>

#include <type_traits>

#include "usrbio/cuda/cuda_api.h"
#include "usrbio/cuda/cuda_types.h"

namespace fgds::cuda {
namespace {

#define FGDS_SAME(ours, theirs) \
  static_assert(                \
      static_cast<long long>(ours) == static_cast<long long>(theirs), #ours)

FGDS_SAME(kCudaSuccess, CUDA_SUCCESS);
FGDS_SAME(kCudaErrorInvalidValue, CUDA_ERROR_INVALID_VALUE);
FGDS_SAME(kCudaErrorOutOfMemory, CUDA_ERROR_OUT_OF_MEMORY);
FGDS_SAME(kCudaErrorNotInitialized, CUDA_ERROR_NOT_INITIALIZED);
FGDS_SAME(kCudaErrorDeinitialized, CUDA_ERROR_DEINITIALIZED);
FGDS_SAME(kCudaErrorStubLibrary, CUDA_ERROR_STUB_LIBRARY);
FGDS_SAME(kCudaErrorCallRequiresNewerDriver,
          CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER);
FGDS_SAME(kCudaErrorDeviceUnavailable, CUDA_ERROR_DEVICE_UNAVAILABLE);
FGDS_SAME(kCudaErrorNoDevice, CUDA_ERROR_NO_DEVICE);
FGDS_SAME(kCudaErrorInvalidDevice, CUDA_ERROR_INVALID_DEVICE);
FGDS_SAME(kCudaErrorInvalidContext, CUDA_ERROR_INVALID_CONTEXT);
FGDS_SAME(kCudaErrorEccUncorrectable, CUDA_ERROR_ECC_UNCORRECTABLE);
FGDS_SAME(kCudaErrorOperatingSystem, CUDA_ERROR_OPERATING_SYSTEM);
FGDS_SAME(kCudaErrorInvalidHandle, CUDA_ERROR_INVALID_HANDLE);
FGDS_SAME(kCudaErrorNotFound, CUDA_ERROR_NOT_FOUND);
FGDS_SAME(kCudaErrorNotReady, CUDA_ERROR_NOT_READY);
FGDS_SAME(kCudaErrorIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS);
FGDS_SAME(kCudaErrorContextIsDestroyed, CUDA_ERROR_CONTEXT_IS_DESTROYED);
FGDS_SAME(kCudaErrorHostMemoryAlreadyRegistered,
          CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
FGDS_SAME(kCudaErrorHostMemoryNotRegistered,
          CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
FGDS_SAME(kCudaErrorLaunchFailed, CUDA_ERROR_LAUNCH_FAILED);
FGDS_SAME(kCudaErrorNotPermitted, CUDA_ERROR_NOT_PERMITTED);
FGDS_SAME(kCudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED);
FGDS_SAME(kCudaErrorSystemNotReady, CUDA_ERROR_SYSTEM_NOT_READY);
FGDS_SAME(kCudaErrorSystemDriverMismatch, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
FGDS_SAME(kCudaErrorUnknown, CUDA_ERROR_UNKNOWN);

FGDS_SAME(kDeviceAttributePciBusId, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
FGDS_SAME(kDeviceAttributePciDeviceId, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
FGDS_SAME(kDeviceAttributePciDomainId, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
FGDS_SAME(kDeviceAttributeDmaBufSupported,
          CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);

FGDS_SAME(kPointerAttributeContext, CU_POINTER_ATTRIBUTE_CONTEXT);
FGDS_SAME(kPointerAttributeMemoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
FGDS_SAME(kPointerAttributeBufferId, CU_POINTER_ATTRIBUTE_BUFFER_ID);
FGDS_SAME(kPointerAttributeIsManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED);
FGDS_SAME(kPointerAttributeDeviceOrdinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
FGDS_SAME(kPointerAttributeRangeStartAddr,
          CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
FGDS_SAME(kPointerAttributeRangeSize, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
FGDS_SAME(kPointerAttributeMapped, CU_POINTER_ATTRIBUTE_MAPPED);

FGDS_SAME(kMemoryTypeHost, CU_MEMORYTYPE_HOST);
FGDS_SAME(kMemoryTypeDevice, CU_MEMORYTYPE_DEVICE);
FGDS_SAME(kMemoryTypeArray, CU_MEMORYTYPE_ARRAY);
FGDS_SAME(kMemoryTypeUnified, CU_MEMORYTYPE_UNIFIED);
FGDS_SAME(kMemRangeHandleTypeDmaBufFd, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);

FGDS_SAME(kStreamNonBlocking, CU_STREAM_NON_BLOCKING);
FGDS_SAME(kEventBlockingSync, CU_EVENT_BLOCKING_SYNC);
FGDS_SAME(kEventDisableTiming, CU_EVENT_DISABLE_TIMING);
FGDS_SAME(kMemHostAllocPortable, CU_MEMHOSTALLOC_PORTABLE);
FGDS_SAME(kMemHostRegisterPortable, CU_MEMHOSTREGISTER_PORTABLE);

static_assert(sizeof(CUdeviceptr) == sizeof(::CUdeviceptr));
static_assert(sizeof(CUresult) == sizeof(::CUresult));
static_assert(sizeof(CUdevice) == sizeof(::CUdevice));

// Each resolved symbol, through cuda.h's own prototype: the return and
// parameter sizes must match CudaApi's member (enums pass as int).
template <typename Ours, typename Theirs>
struct SameArity;
template <typename R1, typename... A1, typename R2, typename... A2>
struct SameArity<R1 (*)(A1...), R2 (*)(A2...)> {
  static constexpr bool value =
      sizeof...(A1) == sizeof...(A2) && ((sizeof(A1) == sizeof(A2)) && ...);
};
#define FGDS_SIGNATURE(member, symbol)                                  \
  static_assert(                                                        \
      SameArity<decltype(CudaApi::member), decltype(&::symbol)>::value, \
      #member " does not match " #symbol " in cuda.h");
FGDS_SIGNATURE(cuInit, cuInit)
FGDS_SIGNATURE(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)
FGDS_SIGNATURE(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState)
FGDS_SIGNATURE(cuDeviceGetAttribute, cuDeviceGetAttribute)
FGDS_SIGNATURE(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId)
FGDS_SIGNATURE(cuPointerGetAttribute, cuPointerGetAttribute)
FGDS_SIGNATURE(cuPointerGetAttributes, cuPointerGetAttributes)
FGDS_SIGNATURE(cuMemGetAddressRange, cuMemGetAddressRange_v2)
FGDS_SIGNATURE(cuMemGetHandleForAddressRange, cuMemGetHandleForAddressRange)
FGDS_SIGNATURE(cuMemHostAlloc, cuMemHostAlloc)
FGDS_SIGNATURE(cuMemHostRegister, cuMemHostRegister_v2)
FGDS_SIGNATURE(cuMemAlloc, cuMemAlloc_v2)
FGDS_SIGNATURE(cuMemFree, cuMemFree_v2)
FGDS_SIGNATURE(cuMemsetD8, cuMemsetD8_v2)
FGDS_SIGNATURE(cuMemcpyHtoD, cuMemcpyHtoD_v2)
FGDS_SIGNATURE(cuMemcpyDtoH, cuMemcpyDtoH_v2)
FGDS_SIGNATURE(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)
FGDS_SIGNATURE(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)
FGDS_SIGNATURE(cuStreamCreate, cuStreamCreate)
FGDS_SIGNATURE(cuStreamDestroy, cuStreamDestroy_v2)
FGDS_SIGNATURE(cuEventCreate, cuEventCreate)
FGDS_SIGNATURE(cuEventDestroy, cuEventDestroy_v2)
FGDS_SIGNATURE(cuEventRecord, cuEventRecord)
FGDS_SIGNATURE(cuEventQuery, cuEventQuery)
FGDS_SIGNATURE(cuEventSynchronize, cuEventSynchronize)
FGDS_SIGNATURE(cuCtxGetDevice, cuCtxGetDevice)
// cuCtxSynchronize is resolved by its bare name, the argument-less ABI of
// CUDA 2.0 that every driver exports; not checked against cuda.h, where newer
// toolkits may map the name to cuCtxSynchronize_v2 (which takes a context).

}  // namespace
}  // namespace fgds::cuda
