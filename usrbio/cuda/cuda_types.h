// File: usrbio/cuda/cuda_types.h
//
// The few CUDA driver API types and constants libfgds uses, declared here so
// that nothing needs CUDA headers to build (DESIGN.md: libcuda only through
// dlopen). Values are the driver ABI (cuda.h of CUDA 11.7 to 13.0);
// cuda_abi_test.cc checks them against cuda.h wherever one is installed.
#ifndef FGDS_USRBIO_CUDA_CUDA_TYPES_H_
#define FGDS_USRBIO_CUDA_CUDA_TYPES_H_

#include <cstddef>
#include <cstdint>

namespace fgds::cuda {

// Enums of the C API are passed as int-sized values; plain ints keep them
// apart from cuda.h's enums when both are visible (the ABI test).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT: the ABI type
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

// CUresult values that the code tells apart (error mapping: cuda_error.cc).
inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorInvalidValue = 1;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;
inline constexpr CUresult kCudaErrorNotInitialized = 3;
inline constexpr CUresult kCudaErrorDeinitialized = 4;
inline constexpr CUresult kCudaErrorStubLibrary = 34;
inline constexpr CUresult kCudaErrorCallRequiresNewerDriver = 36;
inline constexpr CUresult kCudaErrorDeviceUnavailable = 46;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorInvalidDevice = 101;
inline constexpr CUresult kCudaErrorInvalidContext = 201;
inline constexpr CUresult kCudaErrorEccUncorrectable = 214;
inline constexpr CUresult kCudaErrorOperatingSystem = 304;
inline constexpr CUresult kCudaErrorInvalidHandle = 400;
inline constexpr CUresult kCudaErrorNotFound = 500;
inline constexpr CUresult kCudaErrorNotReady = 600;
inline constexpr CUresult kCudaErrorIllegalAddress = 700;
inline constexpr CUresult kCudaErrorContextIsDestroyed = 709;
inline constexpr CUresult kCudaErrorHostMemoryAlreadyRegistered = 712;
inline constexpr CUresult kCudaErrorHostMemoryNotRegistered = 713;
inline constexpr CUresult kCudaErrorLaunchFailed = 719;
inline constexpr CUresult kCudaErrorNotPermitted = 800;
inline constexpr CUresult kCudaErrorNotSupported = 801;
inline constexpr CUresult kCudaErrorSystemNotReady = 802;
inline constexpr CUresult kCudaErrorSystemDriverMismatch = 803;
inline constexpr CUresult kCudaErrorUnknown = 999;

// CUdevice_attribute
inline constexpr int kDeviceAttributePciBusId = 33;
inline constexpr int kDeviceAttributePciDeviceId = 34;
inline constexpr int kDeviceAttributePciDomainId = 50;
inline constexpr int kDeviceAttributeDmaBufSupported = 124;

// CUpointer_attribute
inline constexpr int kPointerAttributeContext = 1;
inline constexpr int kPointerAttributeMemoryType = 2;
inline constexpr int kPointerAttributeBufferId = 7;
inline constexpr int kPointerAttributeIsManaged = 8;
inline constexpr int kPointerAttributeDeviceOrdinal = 9;
inline constexpr int kPointerAttributeRangeStartAddr = 11;
inline constexpr int kPointerAttributeRangeSize = 12;
inline constexpr int kPointerAttributeMapped = 13;

// CUmemorytype
inline constexpr unsigned kMemoryTypeHost = 1;
inline constexpr unsigned kMemoryTypeDevice = 2;
inline constexpr unsigned kMemoryTypeArray = 3;
inline constexpr unsigned kMemoryTypeUnified = 4;

// CUmemRangeHandleType
inline constexpr int kMemRangeHandleTypeDmaBufFd = 1;

// Flags
inline constexpr unsigned kStreamNonBlocking = 0x1;     // CU_STREAM_*
inline constexpr unsigned kEventBlockingSync = 0x1;     // CU_EVENT_*
inline constexpr unsigned kEventDisableTiming = 0x2;    // CU_EVENT_*
inline constexpr unsigned kMemHostAllocPortable = 0x1;  // CU_MEMHOSTALLOC_*
inline constexpr unsigned kMemHostRegisterPortable =
    0x1;  // CU_MEMHOSTREGISTER_*

}  // namespace fgds::cuda

#endif  // FGDS_USRBIO_CUDA_CUDA_TYPES_H_
