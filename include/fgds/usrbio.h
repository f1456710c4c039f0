/* File: include/fgds/usrbio.h
 *
 * usrbio: batched file I/O against an fgds mount through memory shared with
 * the daemon, without one system call per I/O.
 *
 *   session  one per process and mount: a unix socket to the daemon, found
 *            through <mount>/.fgds/session. Closing it (or dying) releases
 *            everything registered through it.
 *   iov      a buffer region (memfd) mapped by the client and the daemon.
 *            Reads land in it, writes come from it.
 *   ior      a submission/completion ring (usrbio_ring.h) plus two eventfds.
 *   fd       a file opened through the mount, registered once; entries name
 *            it by the id fgds_fd_register returns.
 *
 * Conventions (as liburing): the caller owns every struct and pairs each
 * create/open with its destroy/close; functions return 0 (or a count / id)
 * on success and -errno on failure, and never change errno. Params structs
 * grow through flags and reserved fields, which must be zero (-EINVAL
 * otherwise); a NULL params pointer means all defaults.
 *
 * Example (error handling trimmed; see examples/usrbio_read.c):
 *   struct fgds_session s;
 *   fgds_session_open(&s, "/mnt/fgds", NULL);
 *   struct fgds_iov_params ip = {.size = 1 << 20, .numa_node = -1};
 *   struct fgds_iov iov;
 *   fgds_iov_create(&s, &iov, &ip);
 *   struct fgds_ior ior;
 *   fgds_ior_create(&s, &ior, NULL);
 *   int fd = open("/mnt/fgds/data.bin", O_RDONLY);
 *   int id = fgds_fd_register(&s, fd, 0);
 *   fgds_prep_read(&ior, &iov, iov.base, id, 0, 1 << 20, 42);
 *   fgds_ior_submit(&ior);
 *   struct fgds_cqe cqe;
 *   fgds_ior_wait(&ior, &cqe, 1, 1, -1);   // cqe.result = bytes or -errno
 *
 * Thread safety: a session may be used from many threads (registration
 * calls serialize on its lock). An ior has one submitting thread and one
 * reaping thread at a time (they may differ).
 */
#ifndef FGDS_USRBIO_H_
#define FGDS_USRBIO_H_

#include <pthread.h>
#include <stdint.h>

#include "fgds/usrbio_ring.h"

#ifdef __cplusplus
#define FGDS_NOEXCEPT noexcept
extern "C" {
#else
#define FGDS_NOEXCEPT
#endif

/* ---- session ---------------------------------------------------------- */

struct fgds_session_params {
  uint32_t flags; /* none defined: 0 */
  uint32_t reserved[7];
};

struct fgds_session {
  int sock;         /* SOCK_SEQPACKET to the daemon */
  uint32_t version; /* protocol version the daemon speaks */
  uint32_t seq;     /* next request's seq; under lock */
  /* FGDS_LIMIT_* of the daemon limit that refused the last request made
   * through this session (FGDS_LIMIT_NONE when it was not refused by one);
   * also set when fgds_session_open fails. fgds_limit_describe names it.
   * Threads sharing a session see the last request's of any of them. */
  uint32_t last_limit;
  pthread_mutex_t lock; /* one request/reply exchange at a time */
};

/* fgds_session_open connects to the daemon serving `path` (the mountpoint or
 * any path inside the mount). Errors: -ENOTSUP (not an fgds mount, or a
 * daemon without usrbio), -ECONNREFUSED/-ENOENT (daemon gone), -EPROTO
 * (version mismatch), -EINVAL (params), -EDQUOT/-EAGAIN (a daemon limit:
 * session->last_limit says which). */
int fgds_session_open(struct fgds_session* session, const char* path,
                      const struct fgds_session_params* params) FGDS_NOEXCEPT;
/* fgds_session_close disconnects; the daemon drops every iov, ior and fd
 * registered through it (destroy them first to unmap them here too). */
void fgds_session_close(struct fgds_session* session) FGDS_NOEXCEPT;

/* ---- daemon limits ---------------------------------------------------- */

/* Why the daemon refused a request, in fgds_session.last_limit (docs/
 * limits.md lists each limit, its default and the `fgds mount` option that
 * changes it). Per-user limits answer -EDQUOT, daemon-wide caps -EAGAIN,
 * per-session limits -ENOSPC, the rest -EINVAL. */
#define FGDS_LIMIT_NONE 0u
#define FGDS_LIMIT_USER_SESSIONS 1u     /* sessions of one user */
#define FGDS_LIMIT_USER_RINGS 2u        /* iors of one user */
#define FGDS_LIMIT_USER_RING_ENTRIES 3u /* ring entries of one user */
#define FGDS_LIMIT_USER_MAPPINGS 4u     /* iovs + iors of one user */
#define FGDS_LIMIT_USER_BYTES 5u        /* bytes of those of one user */
#define FGDS_LIMIT_DAEMON_MAPPINGS 6u   /* all users' mappings */
#define FGDS_LIMIT_DAEMON_BYTES 7u      /* all users' mapped bytes */
#define FGDS_LIMIT_SESSION_IOVS 8u      /* iovs of one session */
#define FGDS_LIMIT_SESSION_RINGS 9u     /* iors of one session */
#define FGDS_LIMIT_SESSION_FILES 10u    /* registered files of one session */
#define FGDS_LIMIT_IOV_SIZE 11u         /* bytes of one iov */
/* An iov's or ior's memory has pages not yet allocated (holes): the client
 * allocates all of it before registering, so that the pages are charged to
 * the client, never to the daemon (fgds_iov_create does). */
#define FGDS_LIMIT_UNALLOCATED 12u
#define FGDS_LIMIT_USER_FILES 13u   /* registered files of one user */
#define FGDS_LIMIT_DAEMON_FILES 14u /* all users' registered files */
#define FGDS_LIMIT_MAX 14u

/* fgds_limit_describe returns a constant, human-readable description of
 * FGDS_LIMIT_* `limit` naming the `fgds mount` option that changes it
 * ("unknown limit" for other values). */
const char* fgds_limit_describe(uint32_t limit) FGDS_NOEXCEPT;

/* ---- iov -------------------------------------------------------------- */

struct fgds_iov_params {
  uint64_t size;     /* bytes, > 0; rounded up to 4096 */
  int32_t numa_node; /* preferred NUMA node of the pages, or -1 for none */
  uint32_t flags;    /* none defined: 0 */
  uint64_t reserved[4];
};

struct fgds_iov {
  void* base; /* 4096-aligned, size bytes */
  uint64_t size;
  uint32_t id; /* the daemon's id for it in this session */
  int memfd;
  struct fgds_session* session;
  /* GPU iovs (fgds_iov_wrap_gpu): the library's state; NULL for host iovs.
   * base is then the device address and memfd the staging memory's. */
  void* gpu;
};

/* fgds_iov_create makes a memfd of params->size bytes (sealed against
 * shrinking, so the daemon's mapping cannot lose its pages), allocates all
 * of its pages (charged to this process's memory cgroup: the daemon never
 * allocates memory on a client's behalf), maps it and registers it with the
 * daemon. The daemon then seals it against writes through new mappings and
 * write(2) (F_SEAL_FUTURE_WRITE), so that no hole can be punched into it;
 * iov->base stays writable. -ENOMEM when the pages cannot be allocated;
 * -EDQUOT/-EAGAIN/-ENOSPC when a daemon limit refuses it
 * (session->last_limit). */
int fgds_iov_create(struct fgds_session* session, struct fgds_iov* iov,
                    const struct fgds_iov_params* params) FGDS_NOEXCEPT;
/* fgds_iov_destroy unregisters and unmaps. REQUIRES: no I/O in flight on
 * it (the daemon keeps its mapping until its own in-flight I/O ends, but
 * this process's mapping goes away). */
int fgds_iov_destroy(struct fgds_iov* iov) FGDS_NOEXCEPT;

/* ---- GPU iovs --------------------------------------------------------- */

/* fgds_iov_gpu_params.flags */
/* Retain device `device`'s primary context (released by fgds_iov_destroy)
 * instead of using the context current on the calling thread. */
#define FGDS_IOV_GPU_PRIMARY_CTX 1u
#define FGDS_IOV_GPU_VALID_FLAGS (FGDS_IOV_GPU_PRIMARY_CTX)

#define FGDS_IOV_GPU_DEFAULT_STAGING (8ull << 20)
#define FGDS_IOV_GPU_DEFAULT_CHUNK (4u << 20)
#define FGDS_IOV_GPU_MAX_CHUNK (64u << 20)
#define FGDS_IOV_GPU_MAX_STAGING (16ull << 30)

struct fgds_iov_gpu_params {
  /* Pinned host staging memory for this iov, bytes: 0 = 8 MiB (two default
   * chunks: one filling while the other copies). Rounded up to a multiple of
   * chunk_bytes; at least one chunk, at most 16 GiB. It bounds the memory
   * the iov's I/O ever uses, whatever is queued. More is not faster for
   * page-cached reads: staging that stays in the CPU's cache is faster
   * (docs/usrbio.md). */
  uint64_t staging_bytes;
  /* The unit of pipelining: 0 = 4 MiB; a multiple of 4096, <= 64 MiB. */
  uint32_t chunk_bytes;
  uint32_t flags; /* FGDS_IOV_GPU_* */
  int32_t device; /* with FGDS_IOV_GPU_PRIMARY_CTX: the CUDA ordinal */
  uint32_t reserved0;
  uint64_t reserved[4];
};

/* fgds_iov_wrap_gpu makes `iov` stand for `size` bytes of device memory at
 * `dev_ptr`: any part of an allocation (cuMemAlloc, cudaMalloc, a tensor
 * inside a caching allocator's block), never crossing its end. iov->base is
 * dev_ptr and iov->size is size; fgds_prep_io then takes device addresses
 * inside it as `buf`. Nothing is copied or pinned on the device side.
 *
 * The library creates the iov's staging memory (an ordinary usrbio memfd,
 * registered with the daemon and page-locked for the GPU with
 * cuMemHostRegister), a non-blocking CUDA stream and one event per staging
 * chunk, on the device the buffer lives on (CUDA's pointer attributes
 * say which, whatever context is current): in the context current on the
 * calling thread when that is on the buffer's device, else in the
 * buffer's own allocation context or that device's primary context (with
 * FGDS_IOV_GPU_PRIMARY_CTX: the primary context of params->device, which
 * must be the buffer's device, else -EXDEV). The staging memory is placed
 * on the GPU's NUMA node where the host has NUMA. Buffers on several GPUs
 * may be wrapped by one process and used at once. Where the
 * device supports it, it also exports the range as a dma-buf and offers it
 * to the daemon, which maps it for the direct path when it can
 * (fgds_iov_gpu_path); a refusal is not an error. Bounced entries complete
 * with path FGDS_PATH_BOUNCE; see docs/usrbio.md, "GPU iovs", for the
 * pipeline and the exact completion semantics:
 *   - a read's completion is returned only after its device copy finished:
 *     the data is visible to any GPU work (any stream of the context)
 *     launched after fgds_ior_peek/fgds_ior_wait returned it, with no
 *     further synchronization;
 *   - a write copies from the device after fgds_ior_submit: the caller
 *     makes the data ready first (e.g. cudaStreamSynchronize on the stream
 *     that produced it) and keeps it unchanged until the completion.
 * A GPU iov's staging serves one ior at a time (another ior gets -EBUSY
 * from fgds_prep_io while the first has staged entries on it, or any
 * entries on a NIC-only DIRECT iov); a mapped DIRECT iov's aligned
 * entries take no staging and may be in flight on several iors at once
 * (fgds_iov_gpu_path).
 *
 * Returns 0, or -ENODEV/-ENOTSUP (no usable CUDA driver or device; the
 * buffer's GPU is not in FGDS_GPUS, docs/gpu.md), -EINVAL (params, size 0
 * or past the allocation's end), -EXDEV (FGDS_IOV_GPU_PRIMARY_CTX with
 * another device than the buffer's), -EFAULT (dev_ptr is not device
 * memory), -ENOMEM, or a registration
 * error from the daemon. Release with fgds_iov_destroy. */
int fgds_iov_wrap_gpu(struct fgds_session* session, struct fgds_iov* iov,
                      uint64_t dev_ptr, uint64_t size,
                      const struct fgds_iov_gpu_params* params) FGDS_NOEXCEPT;

/* fgds_iov_gpu_path returns the path `iov`'s aligned entries take
 * (FGDS_PATH_DIRECT or FGDS_PATH_BOUNCE), decided once by
 * fgds_iov_wrap_gpu, and, when `reason` is not NULL, stores why it is not
 * direct there (FGDS_IOV_GPU_REASON_*; NONE when direct). -EINVAL for a
 * host iov. The daemon logs the full story ("usrbio session of pid ...").
 *
 * DIRECT: the daemon mapped the GPU memory through the fgds kernel module
 * (its dma-buf, exported with cuMemGetHandleForAddressRange). An entry
 * whose device address, file offset and length are multiples of 4096, of at
 * most 1 GiB, and not buffered (FGDS_SQE_BUFFERED, FGDS_IOR_BUFFERED), goes
 * to the daemon as is and moves by O_DIRECT straight between storage and
 * GPU memory, completing with path FGDS_PATH_DIRECT; it is neither staged
 * nor copied, so a read's data is in GPU memory when its completion
 * arrives, and a write's source must be ready at fgds_ior_submit, as on
 * the bounce path. Every other entry takes the bounce path.
 *
 * Such entries may be in flight on several iors at once; only entries
 * that take the bounce path hold the iov's staging, for one ior at a time
 * (fgds_prep_io's -EBUSY). A completion of such an entry carrying
 * FGDS_PATH_BOUNCE_ENTRY or _ALWAYS (a daemon that should never answer
 * so) is reported as is with result -EREMOTEIO, never retried.
 *
 * DIRECT on a remote backend with RDMA agents (docs/usrbio.md, "GPU iovs
 * over RDMA"; the daemon's reply said FGDS_IOV_GPU_DIRECT_NIC_ONLY): the
 * daemon mapped nothing but keeps the dma-buf for its agents' NIC; such an
 * entry completes FGDS_PATH_RDMA when an agent moved it in place, else the
 * library bounces it transparently (path FGDS_PATH_BOUNCE). Every entry of
 * such an iov, aligned or not, goes through the ior's bounce pipeline, so
 * the iov serves one ior at a time. When the daemon says the NIC will
 * never take the memory, the iov turns BOUNCE (reason
 * FGDS_IOV_GPU_REASON_MAP_FAILED). */
int fgds_iov_gpu_path(const struct fgds_iov* iov,
                      uint32_t* reason) FGDS_NOEXCEPT;

/* Why a GPU iov is on the bounce path (fgds_iov_gpu_path). */
#define FGDS_IOV_GPU_REASON_NONE 0u /* direct */
/* This process could not export the memory as a dma-buf: the device lacks
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, the driver refused, or its PCI
 * address is unknown. */
#define FGDS_IOV_GPU_REASON_NO_DMABUF 1u
/* The daemon refused the dma-buf (an error reply: not a dma-buf, limits;
 * or a BOUNCE reply from a daemon that would keep the dma-buf for its
 * RDMA agents' NIC but has no room: the user's registered-file limit,
 * each kept dma-buf being one file, docs/limits.md). */
#define FGDS_IOV_GPU_REASON_REFUSED 2u
/* The daemon's host has no /dev/fgds_<bdf> for this GPU: the fgds kernel
 * module is not loaded, or not bound to it. */
#define FGDS_IOV_GPU_REASON_NO_MODULE 3u
/* The device node exists but is unusable (open failed, another ABI), or
 * its mode does not let this process's user use it (the udev rule gives it
 * to group fgds): the daemon opens it only for users who could. */
#define FGDS_IOV_GPU_REASON_MODULE_ERROR 4u
/* The storage is not on a block device, or it has no peer-to-peer route to
 * the GPU (e.g. across CPU sockets, or in a VM). */
#define FGDS_IOV_GPU_REASON_NO_P2P 5u
/* The module could not register or map the dma-buf (driver refused a
 * peer-to-peer attachment, limits); or, on a DIRECT iov of a remote
 * backend (docs/usrbio.md, "GPU iovs over RDMA"), the NIC refused it: the
 * daemon answered an entry FGDS_PATH_BOUNCE_ALWAYS, and from then on
 * fgds_iov_gpu_path says BOUNCE with this reason. */
#define FGDS_IOV_GPU_REASON_MAP_FAILED 6u
/* The GPU is not in the daemon's GPU subset (fgds mount --gpus): the
 * daemon maps no memory of it; its iovs bounce. */
#define FGDS_IOV_GPU_REASON_EXCLUDED 7u
#define FGDS_IOV_GPU_REASON_MAX 7u

/* Which DIRECT a GPU_IOV_REGISTER reply means (usrbio_wire.h,
 * fgds_msg_reply.reason with path FGDS_PATH_DIRECT). 0
 * (FGDS_IOV_GPU_REASON_NONE): the daemon mapped the memory through the
 * fgds kernel module, and entries on the iov never bounce; the library
 * sends them to the ring as they are, from as many iors at once as the
 * application likes. Daemons before this constant answered DIRECT only
 * that way. FGDS_IOV_GPU_DIRECT_NIC_ONLY: the daemon mapped nothing and
 * keeps the dma-buf for its RDMA agents' NIC (docs/usrbio.md, "GPU iovs
 * over RDMA"); an entry may come back FGDS_PATH_BOUNCE_ENTRY or _ALWAYS,
 * so the library sends each through the ior's bounce pipeline, which
 * re-issues it on the staging (one ior at a time on the iov). Outside the
 * FGDS_IOV_GPU_REASON_* range (those count up from 1, with room to grow):
 * never a reason fgds_iov_gpu_path stores (it says NONE for both kinds).
 * A client takes any other nonzero value with DIRECT as "may bounce" too,
 * the kind it can always serve. */
#define FGDS_IOV_GPU_DIRECT_NIC_ONLY 0x100u

/* ---- ior -------------------------------------------------------------- */

/* fgds_ior_params.flags */
#define FGDS_IOR_BUFFERED 1u /* every entry goes through the page cache */
#define FGDS_IOR_VALID_FLAGS (FGDS_IOR_BUFFERED)

struct fgds_ior_params {
  uint32_t entries; /* submission slots; 0 = 256 (rounded up to 2^n) */
  uint32_t flags;   /* FGDS_IOR_* */
  /* The daemon starts I/O once io_depth entries are waiting, or when the
   * oldest waiting entry has waited timeout_us, whichever comes first (a
   * batch never stalls). io_depth 0 or 1 = start at once. */
  uint32_t io_depth;
  uint32_t timeout_us; /* 0 = 100 us when io_depth > 1 */
  int32_t priority;    /* -1 low, 0 normal, 1 high */
  /* Microseconds the daemon's worker, and fgds_ior_wait, poll before going
   * to sleep on an eventfd; 0 = never spin. */
  uint32_t spin_us;
  uint64_t reserved[4];
};

struct fgds_ior {
  struct fgds_ring_header* ring;
  struct fgds_sqe* sqes;
  struct fgds_cqe* cqes;
  uint32_t sq_entries;
  uint32_t cq_entries;
  uint32_t sq_pending; /* prepared, not yet submitted */
  uint32_t in_flight;  /* submitted or prepared, not yet reaped */
  uint32_t id;
  uint32_t spin_us;
  uint64_t map_size;
  int memfd;
  int submit_efd;
  int complete_efd;
  uint32_t flags;
  struct fgds_session* session;
  /* The GPU stager, created by the first fgds_prep_io on a GPU iov; NULL
   * while the ior has only carried host entries. */
  void* gpu;
};

int fgds_ior_create(struct fgds_session* session, struct fgds_ior* ior,
                    const struct fgds_ior_params* params) FGDS_NOEXCEPT;
/* REQUIRES: nothing in flight (reap every completion first). Where
 * entries on a GPU iov's staging are still out (the daemon died with them,
 * or the caller broke this), their staging slots stay out of use, the
 * library's record of such an entry (about 100 bytes) may stay unfreed,
 * and the iov may stay bound to this ior (another ior's fgds_prep_io on
 * it: -EBUSY) until fgds_iov_destroy: a daemon still running may yet
 * write into those slots. */
int fgds_ior_destroy(struct fgds_ior* ior) FGDS_NOEXCEPT;

/* ---- files ------------------------------------------------------------ */

/* fgds_fd_register registers `fd`, a regular file opened through this
 * session's mount; I/O may use it with the access mode it was opened with
 * (reads need O_RDONLY/O_RDWR, writes O_WRONLY/O_RDWR). The caller may close
 * `fd` afterwards. Returns the id (>= 0) for fgds_prep_*, or -errno
 * (-EBADF: not a file of this mount, -EINVAL: flags or not a regular
 * file). */
int fgds_fd_register(struct fgds_session* session, int fd,
                     uint32_t flags) FGDS_NOEXCEPT;
int fgds_fd_unregister(struct fgds_session* session, int id) FGDS_NOEXCEPT;

/* ---- I/O -------------------------------------------------------------- */

/* fgds_prep_io queues one entry: `len` bytes between `buf` (inside `iov`)
 * and `file_offset` of registered file `fd_id`. Nothing reaches the daemon
 * before fgds_ior_submit. Returns 0, -EAGAIN (ring full: reap completions
 * first) or -EINVAL (buf/len outside the iov, bad op or flags). Entries that
 * are 4096-aligned in buffer, offset and length go O_DIRECT unless
 * FGDS_SQE_BUFFERED (or FGDS_IOR_BUFFERED) is set, or the entry is a read
 * of at least 64 KiB whose pages are all in the page cache (then served
 * from there: FGDS_PATH_PAGE_CACHE).
 *
 * On a GPU iov, `buf` is a device address inside it and `len` may exceed
 * the staging size: the library splits the entry into chunks and gives
 * exactly one completion for it (bytes, short only at EOF, or -errno; path
 * FGDS_PATH_BOUNCE), or, on a direct GPU iov, an aligned entry goes to the
 * daemon as one entry (path FGDS_PATH_DIRECT; see fgds_iov_gpu_path). Also
 * -EBUSY (another ior is bouncing through the iov, or has entries on a
 * NIC-only DIRECT iov; never for a mapped DIRECT iov's aligned entries)
 * and -ENOMEM. */
int fgds_prep_io(struct fgds_ior* ior, const struct fgds_iov* iov,
                 uint32_t opcode, uint32_t sqe_flags, void* buf, int fd_id,
                 uint64_t file_offset, uint64_t len,
                 uint64_t userdata) FGDS_NOEXCEPT;

static inline int fgds_prep_read(struct fgds_ior* ior,
                                 const struct fgds_iov* iov, void* buf,
                                 int fd_id, uint64_t file_offset, uint64_t len,
                                 uint64_t userdata) FGDS_NOEXCEPT {
  return fgds_prep_io(ior, iov, FGDS_OP_READ, 0, buf, fd_id, file_offset, len,
                      userdata);
}

static inline int fgds_prep_write(struct fgds_ior* ior,
                                  const struct fgds_iov* iov, void* buf,
                                  int fd_id, uint64_t file_offset, uint64_t len,
                                  uint64_t userdata) FGDS_NOEXCEPT {
  return fgds_prep_io(ior, iov, FGDS_OP_WRITE, 0, buf, fd_id, file_offset, len,
                      userdata);
}

/* fgds_prep_fsync queues an fsync(2) of registered file `fd_id`
 * (fdatasync(2) with FGDS_SQE_DATASYNC in `sqe_flags`): durable once its
 * completion (result 0 or -errno) arrives. It covers the writes that had
 * completed when it was submitted: reap the writes first. Returns 0,
 * -EAGAIN (ring full) or -EINVAL. */
int fgds_prep_fsync(struct fgds_ior* ior, int fd_id, uint32_t sqe_flags,
                    uint64_t userdata) FGDS_NOEXCEPT;

/* fgds_ior_submit hands every prepared entry to the daemon (one eventfd
 * write at most, none while the daemon's worker is awake). Returns the
 * number submitted. */
int fgds_ior_submit(struct fgds_ior* ior) FGDS_NOEXCEPT;

/* fgds_ior_peek copies up to `max` ready completions into `cqes` and
 * consumes them, without blocking. Returns the number copied. */
int fgds_ior_peek(struct fgds_ior* ior, struct fgds_cqe* cqes,
                  unsigned max) FGDS_NOEXCEPT;

/* fgds_ior_wait is fgds_ior_peek that first waits until `min` completions
 * are ready (min <= max), or `timeout_us` passed (-1 = no limit). Returns
 * the number copied (fewer than min only on timeout), -ENOTCONN if the
 * daemon is gone, -EINVAL if min > max or min exceeds what is in flight. */
int fgds_ior_wait(struct fgds_ior* ior, struct fgds_cqe* cqes, unsigned max,
                  unsigned min, int64_t timeout_us) FGDS_NOEXCEPT;

/* fgds_ior_eventfd returns the completion eventfd for an event loop
 * (epoll, asyncio): it becomes readable when completions arrive. After it
 * is asked for, the daemon signals every batch. The caller reads it (8
 * bytes) to clear it and then calls fgds_ior_peek. Watch the session's
 * socket too (fgds_session.sock, POLLHUP/POLLIN) to notice a dead daemon. */
int fgds_ior_eventfd(struct fgds_ior* ior) FGDS_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* FGDS_USRBIO_H_ */
