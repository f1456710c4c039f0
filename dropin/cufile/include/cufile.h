/* File: dropin/cufile/include/cufile.h
 *
 * The cuFile C API as FGDS's drop-in libcufile.so.0 implements it: the
 * types, constants and calls that PyTorch (torch.cuda.gds), kvikio and
 * fastsafetensors use, declared from NVIDIA's public API reference
 * (docs.nvidia.com/gpudirect-storage/api-reference-guide) so that programs
 * built against NVIDIA's header and programs built against this one bind
 * to the same ABI: the same struct layouts, enum values and symbol names
 * (unversioned, SONAME libcufile.so.0).
 *
 * Return conventions (cuFile's):
 *   - most calls return CUfileError_t {err, cu_err}: err is CU_FILE_SUCCESS
 *     or a CUfileOpError (5000 + n); cu_err carries a CUDA driver error
 *     where one caused the failure, else 0;
 *   - cuFileRead/cuFileWrite return the bytes moved (>= 0, short only at
 *     end of file), -1 with errno set for a system error (EIO, EBADF, ...),
 *     or -CUfileOpError for a cuFile error.
 *
 * What FGDS honours and what each call returns where it cannot:
 * docs/dropin.md.
 */
#ifndef FGDS_DROPIN_CUFILE_H_
#define FGDS_DROPIN_CUFILE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA driver types, as cuda.h declares them (opaque here). */
#ifndef FGDS_CUFILE_NO_CUDA_TYPES
typedef int CUresult;
typedef struct CUstream_st* CUstream;
#endif

#define CUFILEOP_BASE_ERR 5000

typedef enum CUfileOpError {
  CU_FILE_SUCCESS = 0,
  CU_FILE_DRIVER_NOT_INITIALIZED = 5001,
  CU_FILE_DRIVER_INVALID_PROPS = 5002,
  CU_FILE_DRIVER_UNSUPPORTED_LIMIT = 5003,
  CU_FILE_DRIVER_VERSION_MISMATCH = 5004,
  CU_FILE_DRIVER_VERSION_READ_ERROR = 5005,
  CU_FILE_DRIVER_CLOSING = 5006,
  CU_FILE_PLATFORM_NOT_SUPPORTED = 5007,
  CU_FILE_IO_NOT_SUPPORTED = 5008,
  CU_FILE_DEVICE_NOT_SUPPORTED = 5009,
  CU_FILE_NVFS_DRIVER_ERROR = 5010,
  CU_FILE_CUDA_DRIVER_ERROR = 5011,
  CU_FILE_CUDA_POINTER_INVALID = 5012,
  CU_FILE_CUDA_MEMORY_TYPE_INVALID = 5013,
  CU_FILE_CUDA_POINTER_RANGE_ERROR = 5014,
  CU_FILE_CUDA_CONTEXT_MISMATCH = 5015,
  CU_FILE_INVALID_MAPPING_SIZE = 5016,
  CU_FILE_INVALID_MAPPING_RANGE = 5017,
  CU_FILE_INVALID_FILE_TYPE = 5018,
  CU_FILE_INVALID_FILE_OPEN_FLAG = 5019,
  CU_FILE_DIO_NOT_SET = 5020,
  CU_FILE_INVALID_VALUE = 5022,
  CU_FILE_MEMORY_ALREADY_REGISTERED = 5023,
  CU_FILE_MEMORY_NOT_REGISTERED = 5024,
  CU_FILE_PERMISSION_DENIED = 5025,
  CU_FILE_DRIVER_ALREADY_OPEN = 5026,
  CU_FILE_HANDLE_NOT_REGISTERED = 5027,
  CU_FILE_HANDLE_ALREADY_REGISTERED = 5028,
  CU_FILE_DEVICE_NOT_FOUND = 5029,
  CU_FILE_INTERNAL_ERROR = 5030,
  CU_FILE_GETNEWFD_FAILED = 5031,
  CU_FILE_NVFS_SETUP_ERROR = 5033,
  CU_FILE_IO_DISABLED = 5034,
  CU_FILE_BATCH_SUBMIT_FAILED = 5035,
  CU_FILE_GPU_MEMORY_PINNING_FAILED = 5036,
  CU_FILE_BATCH_FULL = 5037,
  CU_FILE_ASYNC_NOT_SUPPORTED = 5038
} CUfileOpError;

typedef struct CUfileError {
  CUfileOpError err; /* CU_FILE_SUCCESS or a cuFile error */
  CUresult cu_err;   /* the CUDA driver's error behind it, else 0 */
} CUfileError_t;

/* cufileop_status_error names a CUfileOpError in words (header-only, as in
 * cuFile, so that CUFILE_ERRSTR works in programs built against this
 * header). */
static inline const char* cufileop_status_error(CUfileOpError status) {
  switch (status) {
    case CU_FILE_SUCCESS:
      return "cufile success";
    case CU_FILE_DRIVER_NOT_INITIALIZED:
      return "driver not initialized";
    case CU_FILE_IO_NOT_SUPPORTED:
      return "IO not supported";
    case CU_FILE_DEVICE_NOT_SUPPORTED:
      return "device not supported";
    case CU_FILE_CUDA_DRIVER_ERROR:
      return "CUDA driver error (no usable CUDA driver or device)";
    case CU_FILE_CUDA_POINTER_INVALID:
      return "invalid device pointer";
    case CU_FILE_INVALID_MAPPING_SIZE:
      return "invalid mapping size";
    case CU_FILE_INVALID_FILE_TYPE:
      return "invalid file type";
    case CU_FILE_INVALID_VALUE:
      return "invalid argument";
    case CU_FILE_MEMORY_ALREADY_REGISTERED:
      return "memory already registered";
    case CU_FILE_MEMORY_NOT_REGISTERED:
      return "memory not registered";
    case CU_FILE_HANDLE_NOT_REGISTERED:
      return "file descriptor is not registered";
    case CU_FILE_INTERNAL_ERROR:
      return "internal error";
    case CU_FILE_BATCH_FULL:
      return "batch full";
    default:
      return "cufile error";
  }
}

#define CUFILE_ERRSTR(err) cufileop_status_error((CUfileOpError)abs((err)))
#define IS_CUFILE_ERR(err) (abs((err)) > CUFILEOP_BASE_ERR)
#define IS_CUDA_ERR(status) ((status).err == CU_FILE_CUDA_DRIVER_ERROR)
#define CU_FILE_CUDA_ERR(status) ((status).cu_err)

/* ---- driver ----------------------------------------------------------- */

enum CUfileDriverStatusFlags {
  CU_FILE_LUSTRE_SUPPORTED = 0,
  CU_FILE_WEKAFS_SUPPORTED = 1,
  CU_FILE_NFS_SUPPORTED = 2,
  CU_FILE_GPFS_SUPPORTED = 3,
  CU_FILE_NVME_SUPPORTED = 4,
  CU_FILE_NVMEOF_SUPPORTED = 5,
  CU_FILE_SCSI_SUPPORTED = 6,
  CU_FILE_SCALEFLUX_CSD_SUPPORTED = 7,
  CU_FILE_NVMESH_SUPPORTED = 8,
  CU_FILE_BEEGFS_SUPPORTED = 9
};
typedef enum CUfileDriverStatusFlags CUfileDriverStatusFlags_t;

enum CUfileDriverControlFlags {
  CU_FILE_USE_POLL_MODE = 0,
  CU_FILE_ALLOW_COMPAT_MODE = 1
};
typedef enum CUfileDriverControlFlags CUfileDriverControlFlags_t;

enum CUfileFeatureFlags {
  CU_FILE_DYN_ROUTING_SUPPORTED = 0,
  CU_FILE_BATCH_IO_SUPPORTED = 1,
  CU_FILE_STREAMS_SUPPORTED = 2,
  CU_FILE_PARALLEL_IO_SUPPORTED = 3
};
typedef enum CUfileFeatureFlags CUfileFeatureFlags_t;

typedef struct CUfileDrvProps {
  struct {
    unsigned int major_version;
    unsigned int minor_version;
    size_t poll_thresh_size;    /* KiB */
    size_t max_direct_io_size;  /* KiB */
    unsigned int dstatusflags;  /* bits: CUfileDriverStatusFlags */
    unsigned int dcontrolflags; /* bits: CUfileDriverControlFlags */
  } nvfs;
  unsigned int fflags;                     /* bits: CUfileFeatureFlags */
  unsigned int max_device_cache_size;      /* KiB */
  unsigned int per_buffer_cache_size;      /* KiB */
  unsigned int max_device_pinned_mem_size; /* KiB */
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

/* cuFileDriverOpen is optional: the first handle or buffer registration
 * opens the driver too. Each open is balanced by a close. */
CUfileError_t cuFileDriverOpen(void);
CUfileError_t cuFileDriverClose(void);
CUfileError_t cuFileDriverClose_v2(void);
/* The number of opens not yet closed. */
long cuFileUseCount(void);
CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t* props);
CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size);
CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size);
CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size);
CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size);
/* The API version, major * 1000 + minor * 10 (1070 = 1.7). */
CUfileError_t cuFileGetVersion(int* version);

/* ---- file handles ----------------------------------------------------- */

typedef enum CUfileFileHandleType {
  CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,
  CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
  CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3
} CUfileFileHandleType;

/* Callbacks of a user-space file system (USERSPACE_FS handles); FGDS does
 * not take such handles, so the table stays opaque here. */
typedef struct CUfileFSOps CUfileFSOps_t;

typedef struct CUfileDescr_t {
  CUfileFileHandleType type;
  union {
    int fd;       /* CU_FILE_HANDLE_TYPE_OPAQUE_FD */
    void* handle; /* CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 */
  } handle;
  const CUfileFSOps_t* fs_ops; /* CU_FILE_HANDLE_TYPE_USERSPACE_FS */
} CUfileDescr_t;

typedef void* CUfileHandle_t;

CUfileError_t cuFileHandleRegister(CUfileHandle_t* fh, CUfileDescr_t* descr);
void cuFileHandleDeregister(CUfileHandle_t fh);

/* ---- buffers ---------------------------------------------------------- */

CUfileError_t cuFileBufRegister(const void* bufPtr_base, size_t length,
                                int flags);
CUfileError_t cuFileBufDeregister(const void* bufPtr_base);

/* ---- synchronous I/O -------------------------------------------------- */

ssize_t cuFileRead(CUfileHandle_t fh, void* bufPtr_base, size_t size,
                   off_t file_offset, off_t bufPtr_offset);
ssize_t cuFileWrite(CUfileHandle_t fh, const void* bufPtr_base, size_t size,
                    off_t file_offset, off_t bufPtr_offset);

/* ---- batch I/O -------------------------------------------------------- */

typedef enum CUfileOpcode { CUFILE_READ = 0, CUFILE_WRITE = 1 } CUfileOpcode_t;

typedef enum CUFILEStatus_enum {
  CUFILE_WAITING = 0x000001,
  CUFILE_PENDING = 0x000002,
  CUFILE_INVALID = 0x000004,
  CUFILE_CANCELED = 0x000008,
  CUFILE_COMPLETE = 0x000010,
  CUFILE_TIMEOUT = 0x000020,
  CUFILE_FAILED = 0x000040
} CUfileStatus_t;

typedef enum cufileBatchMode { CUFILE_BATCH = 1 } CUfileBatchMode_t;

typedef struct CUfileIOParams {
  CUfileBatchMode_t mode; /* CUFILE_BATCH */
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  CUfileHandle_t fh;
  CUfileOpcode_t opcode;
  void* cookie; /* returned in the event */
} CUfileIOParams_t;

typedef struct CUfileIOEvents {
  void* cookie;
  CUfileStatus_t status; /* CUFILE_COMPLETE or CUFILE_FAILED (or CANCELED) */
  size_t ret;            /* bytes; for CUFILE_FAILED, the negative error */
} CUfileIOEvents_t;

typedef void* CUfileBatchHandle_t;

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch_idp, unsigned nr);
CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
                                  CUfileIOParams_t* iocbp, unsigned int flags);
CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp,
                                     unsigned min_nr, unsigned* nr,
                                     CUfileIOEvents_t* iocbp,
                                     struct timespec* timeout);
CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp);
void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp);

/* ---- stream I/O ------------------------------------------------------- */

CUfileError_t cuFileReadAsync(CUfileHandle_t fh, void* bufPtr_base,
                              size_t* size_p, off_t* file_offset_p,
                              off_t* bufPtr_offset_p, ssize_t* bytes_read_p,
                              CUstream stream);
CUfileError_t cuFileWriteAsync(CUfileHandle_t fh, void* bufPtr_base,
                               size_t* size_p, off_t* file_offset_p,
                               off_t* bufPtr_offset_p, ssize_t* bytes_written_p,
                               CUstream stream);
CUfileError_t cuFileStreamRegister(CUstream stream, unsigned flags);
CUfileError_t cuFileStreamDeregister(CUstream stream);

#ifdef __cplusplus
}
#endif

#endif /* FGDS_DROPIN_CUFILE_H_ */
