/* File: include/fgds/fgds.h
 *
 * libfgds direct API: file bytes into GPU memory and back, for local files,
 * without the fgds daemon. The cuFile shape (driver, buffer registration,
 * pread/pwrite with a file offset and a buffer offset, batch and async
 * calls) with liburing's conventions.
 *
 *   driver  one per process and GPU context: worker threads, pinned host
 *           staging memory, a CUDA stream per worker. Thread-safe: many
 *           threads may issue I/O on one driver at once (the normal case).
 *   buffer  a range of device memory (any cuMemAlloc/cudaMalloc allocation
 *           or a sub-range of one, e.g. a tensor inside a caching
 *           allocator's block). Registering is optional but lets
 *           fgds_buf_deregister fence the I/O in flight on it.
 *   file    any file descriptor; fgds_file_register caches the descriptors
 *           the engine opens beside it (O_DIRECT and buffered twins).
 *
 * Paths. Every I/O reports how its bytes moved between file and GPU:
 *   FGDS_GPU_PATH_BOUNCE  through pinned host staging memory: the file is
 *                         read into staging (from the page cache when all
 *                         of a chunk is cached there, else O_DIRECT where
 *                         offset and size are 4 KiB aligned, else buffered)
 *                         and copied to the GPU with cuMemcpyHtoDAsync,
 *                         pipelined so that disk reads and device copies
 *                         overlap.
 *                         Writes run the same way in reverse.
 *   FGDS_GPU_PATH_DIRECT  the storage device reads into / writes from GPU
 *                         memory itself: the fgds kernel module is loaded
 *                         for this GPU (/dev/fgds_<pci address>), the
 *                         buffer is registered (fgds_buf_register), and
 *                         the file's block device has a P2P route to the
 *                         GPU. The buffer is exported as a dma-buf and
 *                         mapped through the module once per storage
 *                         device, on its first I/O there; O_DIRECT then
 *                         targets GPU memory. Chunks whose pages are all
 *                         in the page cache, and unaligned heads and tails,
 *                         still bounce; an I/O reports DIRECT only when
 *                         every byte went direct. fgds_driver_query says
 *                         why the path is not available.
 *
 * Completion semantics. When fgds_pread returns (or fgds_io_wait reports a
 * read complete), the bytes are in device memory: every device copy the
 * engine issued has finished, so any work the caller submits afterwards,
 * on any stream of any context, sees them. No stream synchronization is
 * needed. Likewise, when fgds_pwrite returns, the bytes have been read out
 * of device memory (the caller may overwrite or free it) and written to
 * the file as pwrite(2) would (visible to readers, not necessarily durable:
 * call fsync). Device work the caller queued before the call that writes
 * the buffer must be complete first: synchronize its stream before
 * fgds_pwrite, as with cudaMemcpy from a buffer a kernel is still writing.
 *
 * Conventions (as liburing): the caller owns every struct; functions return
 * 0, a count or a byte count on success and -errno on failure, and never
 * change errno. Params structs grow through flags and reserved fields,
 * which must be zero (-EINVAL otherwise); a NULL params pointer means all
 * defaults. After a failure, fgds_last_error() tells why in words.
 *
 * Errors common to the calls: -ENODEV no usable CUDA driver or device
 * (libcuda.so.1 missing, no GPU), -ENOTSUP driver too old, -EINVAL bad
 * argument, -EFAULT the address is not device memory (or no longer is),
 * -EBADF bad file descriptor or wrong access mode.
 *
 * Example (error handling trimmed):
 *   fgds_driver* drv;
 *   fgds_driver_open(&drv, NULL);           // uses the current CUDA context
 *   fgds_buf_register(drv, dptr, bytes, 0);
 *   int fd = open("weights.bin", O_RDONLY);
 *   ssize_t n = fgds_pread(drv, fd, dptr, bytes, 0, 0);
 *   // n bytes are in device memory now; launch kernels on them.
 *   fgds_buf_deregister(drv, dptr);
 *   fgds_driver_close(drv);
 */
#ifndef FGDS_FGDS_H_
#define FGDS_FGDS_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef FGDS_NOEXCEPT
#ifdef __cplusplus
#define FGDS_NOEXCEPT noexcept
#else
#define FGDS_NOEXCEPT
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* How an I/O's bytes moved between the file and the GPU (fgds_io.path). */
#define FGDS_GPU_PATH_NONE 0u   /* failed before any byte moved */
#define FGDS_GPU_PATH_BOUNCE 1u /* pinned host staging + device copy */
#define FGDS_GPU_PATH_DIRECT 2u /* storage <-> GPU memory, no host copy */

/* Where the file side of an I/O went (fgds_io.source, bits). */
#define FGDS_SRC_PAGE_CACHE 1u /* read from pages already cached */
#define FGDS_SRC_O_DIRECT 2u   /* O_DIRECT to/from the device */
#define FGDS_SRC_BUFFERED                       \
  4u /* buffered I/O (unaligned head/tail, or a \
        file system without O_DIRECT) */

typedef struct fgds_driver fgds_driver;

/* ---- driver ----------------------------------------------------------- */

/* fgds_driver_params.flags */
/* Use the primary context of CUDA device `device` (retained for the
 * driver's lifetime) instead of the calling thread's current context. */
#define FGDS_DRIVER_PRIMARY_CTX (1u << 0)
/* Never serve aligned reads from the page cache: always O_DIRECT. */
#define FGDS_DRIVER_NO_PAGE_CACHE (1u << 1)
#define FGDS_DRIVER_VALID_FLAGS \
  (FGDS_DRIVER_PRIMARY_CTX | FGDS_DRIVER_NO_PAGE_CACHE)

struct fgds_driver_params {
  uint32_t flags;   /* FGDS_DRIVER_* */
  int32_t device;   /* with FGDS_DRIVER_PRIMARY_CTX: the device ordinal;
                       otherwise 0 */
  uint32_t workers; /* I/O threads; 0 = half the CPUs, at most 16 */
  uint32_t reserved0;
  /* Bytes per pipelined step (one disk read + one device copy); a multiple
   * of 4096 from 64 KiB to 256 MiB; 0 = 2 MiB. */
  uint64_t chunk_bytes;
  /* Upper bound on pinned host memory for staging; at least 2 chunks.
   * Each worker gets staging_bytes / workers, at least 2 chunks (workers
   * are reduced to fit); 0 = 8 chunks per worker. */
  uint64_t staging_bytes;
  uint64_t reserved[4];
};

/* fgds_driver_open starts a driver on the CUDA context current on the
 * calling thread (or the device's primary context with
 * FGDS_DRIVER_PRIMARY_CTX); it never creates a context of its own.
 * Allocates the staging memory and starts the workers. Errors: -ENODEV,
 * -ENOTSUP, -EINVAL (params; no current context), -ENOMEM. */
int fgds_driver_open(fgds_driver** driver,
                     const struct fgds_driver_params* params) FGDS_NOEXCEPT;

/* fgds_driver_close stops the workers and frees everything, registrations
 * included. -EBUSY (and nothing is closed) while an fgds_io submitted with
 * fgds_io_submit has not been waited for. REQUIRES: no other thread is in
 * a call on this driver. */
int fgds_driver_close(fgds_driver* driver) FGDS_NOEXCEPT;

struct fgds_driver_info {
  int32_t device;            /* CUDA device ordinal of the context */
  uint32_t dmabuf_supported; /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
  char pci_bus_id[16];       /* "0000:3b:00.0" */
  uint32_t path;             /* FGDS_GPU_PATH_* for aligned I/O */
  uint32_t workers;
  uint64_t chunk_bytes;
  uint64_t staging_bytes; /* pinned host memory in use */
  /* Why FGDS_GPU_PATH_DIRECT is not used ("" when it is). */
  char direct_unavailable[200];
  uint64_t reserved[8];
};

/* fgds_driver_query fills `info`. */
int fgds_driver_query(fgds_driver* driver,
                      struct fgds_driver_info* info) FGDS_NOEXCEPT;

/* Totals since fgds_driver_open. */
struct fgds_driver_stats {
  uint64_t ios;              /* completed I/Os (reads + writes) */
  uint64_t errors;           /* of which failed */
  uint64_t bytes_read;       /* file -> GPU */
  uint64_t bytes_written;    /* GPU -> file */
  uint64_t bytes_bounce;     /* moved by FGDS_GPU_PATH_BOUNCE */
  uint64_t bytes_direct;     /* moved by FGDS_GPU_PATH_DIRECT */
  uint64_t bytes_page_cache; /* file side: served from the page cache */
  uint64_t bytes_o_direct;   /* file side: O_DIRECT */
  uint64_t bytes_buffered;   /* file side: buffered */
  uint64_t reserved[7];
};

int fgds_driver_get_stats(fgds_driver* driver,
                          struct fgds_driver_stats* stats) FGDS_NOEXCEPT;

/* fgds_last_error returns why the calling thread's last failed fgds_ call
 * failed, in words ("" if none failed yet). Valid until the thread's next
 * fgds_ call. */
const char* fgds_last_error(void) FGDS_NOEXCEPT;

/* ---- buffers ---------------------------------------------------------- */

/* fgds_buf_register registers [devptr, devptr + size), which must lie
 * inside one device allocation (a sub-range is fine). flags: 0. Errors:
 * -EFAULT (not device memory, or runs past the allocation), -EEXIST
 * (overlaps a registered buffer), -EINVAL. */
int fgds_buf_register(fgds_driver* driver, void* devptr, size_t size,
                      uint32_t flags) FGDS_NOEXCEPT;

/* fgds_buf_deregister removes the buffer registered at `devptr`. It fences:
 * it returns only when every I/O that was in flight on the buffer has
 * finished, so the caller may free the memory afterwards. (I/O started
 * meanwhile treats the range as unregistered device memory and is not
 * waited for.) -ENOENT if not registered.
 *
 * Freeing memory while I/O on it is in flight is a caller bug, but it
 * cannot corrupt other memory: before each device copy the engine checks
 * that the address still belongs to the allocation it had at submission
 * (CUDA's buffer id) and fails the I/O with -EFAULT otherwise, and copies
 * already queued finish before cuMemFree releases the memory. */
int fgds_buf_deregister(fgds_driver* driver, void* devptr) FGDS_NOEXCEPT;

/* ---- files ------------------------------------------------------------ */

/* fgds_file_register opens the engine's twins of `fd` (an O_DIRECT one
 * and a buffered one, through /proc/self/fd) once, instead of on every
 * I/O. The twins keep the file open until fgds_file_deregister or
 * fgds_driver_close: deregister before closing `fd`. -EEXIST if already
 * registered, -EBADF. */
int fgds_file_register(fgds_driver* driver, int fd) FGDS_NOEXCEPT;
int fgds_file_deregister(fgds_driver* driver, int fd) FGDS_NOEXCEPT;

/* ---- synchronous I/O -------------------------------------------------- */

/* fgds_pread reads `size` bytes at `file_offset` of `fd` into device
 * memory at devptr + buf_offset, and returns the bytes read (fewer only at
 * end of file) or -errno. devptr is a registered buffer's start (the range
 * must then lie inside that buffer, else -EINVAL) or any device address.
 * Returns once the bytes are in device memory (see Completion semantics).
 * Any offset and size work; 4 KiB-aligned ones avoid buffered head/tail
 * reads. */
ssize_t fgds_pread(fgds_driver* driver, int fd, void* devptr, size_t size,
                   off_t file_offset, off_t buf_offset) FGDS_NOEXCEPT;

/* fgds_pwrite writes `size` bytes from device memory at devptr + buf_offset
 * to `fd` at `file_offset`; returns the bytes written or -errno. */
ssize_t fgds_pwrite(fgds_driver* driver, int fd, const void* devptr,
                    size_t size, off_t file_offset,
                    off_t buf_offset) FGDS_NOEXCEPT;

/* ---- batch and async I/O ---------------------------------------------- */

#define FGDS_OP_READ 1u
#define FGDS_OP_WRITE 2u

/* One I/O. The caller fills the first block and zeroes the rest
 * (`internal` and the reserved words must be zero at submission). */
struct fgds_io {
  uint32_t opcode; /* FGDS_OP_READ or FGDS_OP_WRITE */
  uint32_t flags;  /* 0 */
  int32_t fd;
  uint32_t reserved0;
  void* devptr; /* as for fgds_pread */
  uint64_t size;
  int64_t file_offset;
  int64_t buf_offset;
  uint64_t userdata; /* never touched by the library */
  /* Set when the I/O completes. */
  int64_t result;  /* bytes or -errno */
  uint32_t path;   /* FGDS_GPU_PATH_* */
  uint32_t source; /* FGDS_SRC_* bits */
  /* Owned by the library between submission and completion. */
  void* internal;
  uint64_t reserved[3];
};

/* fgds_io_batch runs `nr` I/Os concurrently and returns when all have
 * completed; each one's result, path and source are set. Returns 0, or
 * -EINVAL (and runs none) when an fgds_io is malformed (opcode, flags,
 * reserved words). Per-I/O failures are in their `result`. */
int fgds_io_batch(fgds_driver* driver, struct fgds_io* ios,
                  unsigned nr) FGDS_NOEXCEPT;

/* fgds_io_submit starts `nr` I/Os and returns nr at once (or -errno, and
 * starts none). Each one stays owned by the library, and must neither be
 * modified nor freed, until fgds_io_wait has reported it complete; every
 * submitted I/O must be waited for. */
int fgds_io_submit(fgds_driver* driver, struct fgds_io* ios,
                   unsigned nr) FGDS_NOEXCEPT;

/* fgds_io_wait waits up to `timeout_us` (-1: forever, 0: just check) for
 * `io` to complete. Returns 0 when it has (result, path and source are set
 * and the io is the caller's again), -ETIME if not yet, -EINVAL if `io` is
 * not in flight. Any thread may wait for any submitted I/O, once. */
int fgds_io_wait(fgds_driver* driver, struct fgds_io* io,
                 int64_t timeout_us) FGDS_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* FGDS_FGDS_H_ */
