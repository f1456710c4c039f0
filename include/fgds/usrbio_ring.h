/* File: include/fgds/usrbio_ring.h
 *
 * The memory layout a usrbio client and the fgds daemon share: one ring (an
 * "ior") lives in a memfd the client creates and both map. It holds a header,
 * a submission queue (SQ) the client produces and the daemon consumes, and a
 * completion queue (CQ) the daemon produces and the client consumes.
 *
 *   offset 0                    struct fgds_ring_header (4 cache lines)
 *   layout.sq_offset            struct fgds_sqe[sq_entries]
 *   layout.cq_offset            struct fgds_cqe[cq_entries]
 *
 * Both sides compute the layout from the entry count alone
 * (fgds_ring_get_layout); the daemon checks the header the client wrote against
 * it once and never trusts the header's sizes afterwards. Indexes are
 * free-running 32-bit counters; slot = index & (entries - 1).
 *
 * Each index has its own cache line and exactly one writer:
 *   sq_tail  client   (publishes SQEs; release)
 *   sq_head  daemon   (consumed SQEs; release)
 *   cq_tail  daemon   (publishes CQEs; release)
 *   cq_head  client   (reaped CQEs; release)
 * The flags words let each side sleep on its eventfd without losing a wakeup
 * (see FGDS_RING_SQ_NEED_WAKEUP and FGDS_RING_CQ_WAITING).
 *
 * C only, fixed-width types, explicit padding; compiles as C and C++.
 */
#ifndef FGDS_USRBIO_RING_H_
#define FGDS_USRBIO_RING_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define FGDS_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define FGDS_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define FGDS_RING_MAGIC 0x52534447u /* "GDSR" little-endian */
#define FGDS_RING_VERSION 1u
#define FGDS_CACHE_LINE 64u

/* Limits on a ring (the daemon refuses anything outside them). */
#define FGDS_RING_MIN_ENTRIES 1u
#define FGDS_RING_MAX_ENTRIES 32768u

/* SQE opcodes. */
#define FGDS_OP_READ 1u
#define FGDS_OP_WRITE 2u
/* fsync(2) of the file (fdatasync(2) with FGDS_SQE_DATASYNC): iov_id,
 * iov_offset, file_offset and len are 0. It covers the writes that had
 * completed when it was submitted (reap them first), as io_uring's fsync. */
#define FGDS_OP_FSYNC 3u

/* SQE flags. */
/* Serve this entry through the page cache even if it is aligned. */
#define FGDS_SQE_BUFFERED 1u
/* FGDS_OP_FSYNC only: data (and the size), not every attribute. */
#define FGDS_SQE_DATASYNC 2u
#define FGDS_SQE_VALID_FLAGS (FGDS_SQE_BUFFERED | FGDS_SQE_DATASYNC)

/* How a completion's data moved (fgds_cqe.path). */
#define FGDS_PATH_NONE 0u   /* no data moved: failed before any I/O, or fsync */
#define FGDS_PATH_DIRECT 1u /* O_DIRECT, straight between iov and disk */
#define FGDS_PATH_PAGE_CACHE 2u /* buffered, through the page cache */
/* A GPU iov entry (fgds_iov_wrap_gpu): through pinned host staging memory
 * and a device copy made by the client library. */
#define FGDS_PATH_BOUNCE 3u
/* Moved by a storage-side agent (`fgds mount --agents`, docs/agent.md):
 * over TCP, or by RDMA straight into or out of the iov. */
#define FGDS_PATH_TCP 4u
#define FGDS_PATH_RDMA 5u
/* "Bounce this entry": an entry on a GPU iov that the daemon answered
 * DIRECT without mapping it (reason FGDS_IOV_GPU_DIRECT_NIC_ONLY: a remote
 * backend whose RDMA agents reach GPU memory only by the NIC, docs/usrbio.md
 * "GPU iovs over RDMA") that no agent moved. Always with result
 * FGDS_RESULT_BOUNCE (-EREMOTEIO): the pair is the signal, so a real -EREMOTEIO
 * error (which never carries these paths) is never taken for it. No byte of a
 * read reached the caller as data it may use; a write may have reached the file
 * in part, and bouncing it writes the same bytes at the same offsets. libfgds
 * re-issues such an entry through the iov's bounce staging and reports one
 * completion (path FGDS_PATH_BOUNCE): applications using libfgds never see
 * these, unless a daemon answers so for an entry that cannot bounce (on a host
 * iov, or a GPU iov it said it mapped): libfgds then reports that entry
 * with result -EREMOTEIO and the path as given, and retries nothing.
 * _ALWAYS: and no later entry of the iov will move directly either (the
 * NIC refused its dma-buf, or the mount checks agent payloads with the
 * CPU): the library bounces every later entry of the iov. */
#define FGDS_PATH_BOUNCE_ENTRY 6u
#define FGDS_PATH_BOUNCE_ALWAYS 7u
#define FGDS_RESULT_BOUNCE (-EREMOTEIO)

/* sq_flags bits (written by the daemon, read by the client). */
/* The daemon's worker is asleep on the submit eventfd: a submit must write
 * it. Cleared by the daemon when it wakes. */
#define FGDS_RING_SQ_NEED_WAKEUP 1u

/* cq_flags bits (written by the client, read by the daemon). */
/* A client thread sleeps on the completion eventfd: the daemon writes it
 * after publishing completions. */
#define FGDS_RING_CQ_WAITING 1u
/* The application polls the completion eventfd itself (fgds_ior_eventfd):
 * the daemon signals every batch of completions. */
#define FGDS_RING_CQ_ALWAYS_NOTIFY 2u

/* A submission: copied once out of shared memory by the daemon, then
 * validated. Reserved fields must be zero. */
/* fgds_sqe.tag of the library's GPU iov staging I/O ("GPUB"). The daemon
 * only counts such entries apart in its statistics. */
#define FGDS_SQE_TAG_GPU_STAGING 0x42555047u
/* fgds_sqe.tag of the library's entries on a DIRECT GPU iov's own id
 * ("GPUD"): each is one application entry, which the library re-issues
 * through the staging when the daemon answers FGDS_PATH_BOUNCE_ENTRY. */
#define FGDS_SQE_TAG_GPU_DIRECT 0x44555047u

struct fgds_sqe {
  uint8_t opcode; /* FGDS_OP_READ, FGDS_OP_WRITE or FGDS_OP_FSYNC */
  uint8_t flags;  /* FGDS_SQE_* */
  uint16_t reserved0;
  uint32_t iov_id; /* an iov registered by this session */
  uint32_t fd_id;  /* a file registered by this session */
  /* Echoed unchanged in fgds_cqe.tag. The client library marks its own
   * entries with it (FGDS_SQE_TAG_GPU_STAGING); fgds_prep_io writes 0. */
  uint32_t tag;
  uint64_t iov_offset; /* where in the iov the data goes / comes from */
  uint64_t file_offset;
  uint64_t len;
  uint64_t userdata; /* returned in the completion */
};

/* A completion. */
struct fgds_cqe {
  int64_t result;    /* bytes transferred (short only at EOF), or -errno */
  uint64_t userdata; /* the submission's */
  uint32_t path;     /* FGDS_PATH_* */
  uint32_t tag;      /* the submission's tag */
};

/* One index, alone on its cache line so the two sides never write the same
 * line (false sharing would cost a cache-line transfer per access). */
struct fgds_ring_index {
  uint32_t value;
  uint32_t flags;
  uint8_t pad[FGDS_CACHE_LINE - 8];
};

struct fgds_ring_header {
  uint32_t magic;       /* FGDS_RING_MAGIC */
  uint32_t version;     /* FGDS_RING_VERSION */
  uint32_t header_size; /* sizeof(struct fgds_ring_header) */
  uint32_t sqe_size;    /* sizeof(struct fgds_sqe) */
  uint32_t cqe_size;    /* sizeof(struct fgds_cqe) */
  uint32_t sq_entries;  /* power of two */
  uint32_t cq_entries;  /* 2 * sq_entries */
  uint32_t reserved0;
  uint64_t sq_offset;
  uint64_t cq_offset;
  uint64_t total_size;
  uint8_t pad[FGDS_CACHE_LINE - 56];
  /* sq_tail.value: client; sq_head.value and sq_head.flags (SQ flags):
   * daemon; cq_tail.value: daemon; cq_head.value and cq_head.flags (CQ
   * flags): client. Each writer owns its whole line. */
  struct fgds_ring_index sq_tail;
  struct fgds_ring_index sq_head;
  struct fgds_ring_index cq_tail;
  struct fgds_ring_index cq_head;
};

FGDS_STATIC_ASSERT(sizeof(struct fgds_sqe) == 48, "fgds_sqe is ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_sqe, iov_id) == 4, "fgds_sqe ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_sqe, iov_offset) == 16, "fgds_sqe ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_sqe, userdata) == 40, "fgds_sqe ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_cqe) == 24, "fgds_cqe is ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_cqe, path) == 16, "fgds_cqe ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_sqe, tag) == 12, "fgds_sqe ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_cqe, tag) == 20, "fgds_cqe ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_ring_index) == FGDS_CACHE_LINE,
                   "one index per cache line");
FGDS_STATIC_ASSERT(offsetof(struct fgds_ring_header, total_size) == 48,
                   "fgds_ring_header ABI");
FGDS_STATIC_ASSERT(offsetof(struct fgds_ring_header, sq_tail) ==
                       1 * FGDS_CACHE_LINE,
                   "sq_tail on line 1");
FGDS_STATIC_ASSERT(offsetof(struct fgds_ring_header, sq_head) ==
                       2 * FGDS_CACHE_LINE,
                   "sq_head on line 2");
FGDS_STATIC_ASSERT(offsetof(struct fgds_ring_header, cq_tail) ==
                       3 * FGDS_CACHE_LINE,
                   "cq_tail on line 3");
FGDS_STATIC_ASSERT(offsetof(struct fgds_ring_header, cq_head) ==
                       4 * FGDS_CACHE_LINE,
                   "cq_head on line 4");
FGDS_STATIC_ASSERT(sizeof(struct fgds_ring_header) == 5 * FGDS_CACHE_LINE,
                   "fgds_ring_header is ABI");

struct fgds_ring_layout {
  uint32_t sq_entries;
  uint32_t cq_entries;
  uint64_t sq_offset;
  uint64_t cq_offset;
  uint64_t total_size; /* rounded up to 4096 */
};

/* fgds_ring_get_layout computes where everything lives for a ring of `entries`
 * submission slots (rounded up to a power of two). Returns 0, or -EINVAL
 * (22) when entries is outside [FGDS_RING_MIN_ENTRIES,
 * FGDS_RING_MAX_ENTRIES]. Both sides call it; it is the single definition. */
static inline int fgds_ring_get_layout(uint32_t entries,
                                       struct fgds_ring_layout* out) {
  uint32_t n = 1;
  if (entries < FGDS_RING_MIN_ENTRIES || entries > FGDS_RING_MAX_ENTRIES) {
    return -22; /* -EINVAL without pulling <errno.h> into users' code */
  }
  while (n < entries) n <<= 1;
  out->sq_entries = n;
  out->cq_entries = 2 * n;
  out->sq_offset = sizeof(struct fgds_ring_header);
  out->cq_offset = out->sq_offset + (uint64_t)n * sizeof(struct fgds_sqe);
  out->total_size =
      (out->cq_offset + (uint64_t)out->cq_entries * sizeof(struct fgds_cqe) +
       4095) &
      ~(uint64_t)4095;
  return 0;
}

/* Index accessors for both sides. Each index has one writer; the other side
 * reads it with acquire (so the entries published before it are visible)
 * and the writer publishes with release (so its entry writes, or its reads
 * of consumed entries, happen before the slot changes hands). */
static inline uint32_t fgds_load_acquire(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void fgds_store_release(uint32_t* p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
/* Sleep/wakeup handshakes (NEED_WAKEUP, CQ_WAITING) are Dekker-style: each
 * side stores its flag or index, then a full fence, then loads the other's,
 * so at least one of them sees the other and no wakeup is lost. */
static inline void fgds_full_fence(void) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline uint32_t fgds_load_relaxed(const uint32_t* p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void fgds_store_relaxed(uint32_t* p, uint32_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

#endif /* FGDS_USRBIO_RING_H_ */
