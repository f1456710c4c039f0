/* File: include/fgds/usrbio_wire.h
 *
 * The messages a usrbio client and the fgds daemon exchange over a session's
 * unix socket (SOCK_SEQPACKET: one message per packet, file descriptors in
 * SCM_RIGHTS). The client sends a request, the daemon answers each with one
 * FGDS_MSG_REPLY carrying the request's seq. The data path does not use the
 * socket: it runs through the rings (usrbio_ring.h).
 *
 * Every message is a header followed by the payload struct of its type, and
 * its length is exactly sizeof(header) + sizeof(payload). Reserved fields
 * must be zero. A message that breaks any of these rules (or carries the
 * wrong number of descriptors) is malformed: the daemon answers
 * FGDS_MSG_ERROR with -EPROTO and closes that session only. A well-formed
 * request with bad values gets a REPLY with -errno and the session goes on.
 * A connection over its user's session limit is answered at once, before
 * any request, with FGDS_MSG_ERROR (seq 0, -EDQUOT, reason
 * FGDS_LIMIT_USER_SESSIONS) and closed; the client reads it as the answer
 * to its HELLO (docs/limits.md).
 *
 * C only, fixed-width types, explicit padding; compiles as C and C++.
 */
#ifndef FGDS_USRBIO_WIRE_H_
#define FGDS_USRBIO_WIRE_H_

#include <stdint.h>

#include "fgds/usrbio_ring.h"

#define FGDS_WIRE_MAGIC 0x57534447u /* "GDSW" little-endian */
#define FGDS_WIRE_VERSION 1u
/* No message is larger; the daemon's receive buffer is this size. */
#define FGDS_WIRE_MAX_MESSAGE 128u
#define FGDS_WIRE_MAX_FDS 3u

enum fgds_msg_type {
  FGDS_MSG_HELLO = 1,            /* no fds; first message of a session */
  FGDS_MSG_IOV_REGISTER = 2,     /* fd: the iov memfd */
  FGDS_MSG_IOV_UNREGISTER = 3,   /* no fds; also for GPU iovs */
  FGDS_MSG_IOR_REGISTER = 4,     /* fds: ring memfd, submit efd, complete efd */
  FGDS_MSG_IOR_UNREGISTER = 5,   /* no fds */
  FGDS_MSG_FD_REGISTER = 6,      /* fd: a file opened through the mount */
  FGDS_MSG_FD_UNREGISTER = 7,    /* no fds */
  FGDS_MSG_GPU_IOV_REGISTER = 8, /* fd: a dma-buf of GPU memory */
  FGDS_MSG_IOV_GPU_STAGING = 9,  /* no fds; only to daemons that offer it */
  FGDS_MSG_REPLY = 0x100,        /* daemon -> client */
  FGDS_MSG_ERROR = 0x101         /* daemon -> client, then the session closes */
};

/* HELLO reply features (fgds_msg_reply.path of the HELLO reply). */
#define FGDS_FEATURE_IOV_GPU_STAGING 1u /* understands IOV_GPU_STAGING */

struct fgds_msg_header {
  uint32_t magic;   /* FGDS_WIRE_MAGIC */
  uint16_t version; /* FGDS_WIRE_VERSION */
  uint16_t type;    /* enum fgds_msg_type */
  uint32_t length;  /* header + payload, bytes */
  uint32_t seq;     /* chosen by the client, echoed in the reply */
};

struct fgds_msg_hello {
  uint32_t flags; /* none defined: 0 */
  uint32_t reserved[3];
};

struct fgds_msg_iov_register {
  uint64_t size;  /* bytes of the memfd the daemon maps; <= its file size */
  uint32_t flags; /* none defined: 0 */
  uint32_t reserved;
};

/* GPU_IOV_REGISTER: a range of GPU memory, exported by the client as a
 * dma-buf (cuMemGetHandleForAddressRange), for the daemon to map through the
 * fgds kernel module of that GPU, /dev/fgds_<pci_bus_id>. Well-formed but
 * unacceptable values (size 0, a range outside the dma-buf, a pci_bus_id
 * that is not a PCI address, a descriptor that is not a dma-buf) get
 * -EINVAL. Where the daemon cannot map it (no module, no peer-to-peer
 * route), the reply is result 0 with path FGDS_PATH_BOUNCE, a reason and no
 * iov: the client then moves the data through its staging memory. */
struct fgds_msg_gpu_iov_register {
  uint64_t size;          /* bytes of the GPU range, > 0 */
  uint64_t dmabuf_offset; /* where the range starts inside the dma-buf */
  uint64_t dmabuf_size;   /* bytes of the dma-buf; the range lies inside */
  /* The GPU's PCI address as cuDeviceGetPCIBusId writes it
   * ("0000:3B:00.0"): NUL-terminated, zero after the NUL. */
  char pci_bus_id[16];
  uint32_t flags; /* none defined: 0 */
  uint32_t reserved0;
  uint64_t reserved[2];
};

/* IOV_GPU_STAGING: the session's host iov `iov_id` is the staging memory
 * of a GPU iov on the GPU at `pci_bus_id`: the daemon counts the bytes of
 * its entries for that GPU (`fgds stat`'s per-GPU rows). Accounting only.
 * -EINVAL for an iov the session does not have (or a GPU iov), or a
 * pci_bus_id that is no PCI address. Sent only when the HELLO reply's
 * features hold FGDS_FEATURE_IOV_GPU_STAGING: an older daemon takes an
 * unknown message type for a malformed one and closes the session. */
struct fgds_msg_iov_gpu_staging {
  uint32_t iov_id;
  uint32_t flags;      /* none defined: 0 */
  char pci_bus_id[16]; /* as in fgds_msg_gpu_iov_register */
  uint64_t reserved;
};

struct fgds_msg_ior_register {
  uint32_t entries; /* as passed to fgds_ring_get_layout */
  uint32_t flags;   /* FGDS_IOR_* (usrbio.h) */
  uint32_t io_depth;
  uint32_t timeout_us;
  int32_t priority;
  uint32_t spin_us;
  uint64_t reserved;
};

struct fgds_msg_fd_register {
  uint32_t flags; /* none defined: 0 */
  uint32_t reserved;
};

/* IOV_UNREGISTER, IOR_UNREGISTER, FD_UNREGISTER. */
struct fgds_msg_unregister {
  uint32_t id;
  uint32_t reserved;
};

/* REPLY and ERROR. */
struct fgds_msg_reply {
  int32_t result; /* 0 or -errno */
  uint32_t id;    /* the new object's id (registrations), protocol version
                     (HELLO); GPU_IOV_REGISTER: only when path is DIRECT */
  /* GPU_IOV_REGISTER with result 0: FGDS_PATH_DIRECT (the daemon mapped the
   * GPU memory, or keeps its dma-buf for a NIC, `reason` says which;
   * entries on `id` move data straight between storage and the GPU) or
   * FGDS_PATH_BOUNCE (nothing registered; `reason` says why).
   * HELLO: the daemon's FGDS_FEATURE_* bits (0 from daemons before them).
   * 0 in every other reply. */
  uint32_t path;
  /* With result 0: FGDS_IOV_GPU_REASON_* (usrbio.h) for a GPU_IOV_REGISTER
   * on the BOUNCE path; on the DIRECT path, which DIRECT it is: 0 when the
   * daemon mapped the GPU memory (entries never bounce),
   * FGDS_IOV_GPU_DIRECT_NIC_ONLY (usrbio.h) when it keeps the dma-buf for
   * its RDMA agents' NIC only (entries may come back
   * FGDS_PATH_BOUNCE_ENTRY/_ALWAYS); else 0. With a negative result: the
   * FGDS_LIMIT_* (usrbio.h) that refused the request, FGDS_LIMIT_NONE for
   * other errors. */
  uint32_t reason;
};

FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_header) == 16, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_hello) == 16, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_iov_register) == 16, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_gpu_iov_register) == 64, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_iov_gpu_staging) == 32, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_ior_register) == 32, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_fd_register) == 8, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_unregister) == 8, "wire ABI");
FGDS_STATIC_ASSERT(sizeof(struct fgds_msg_reply) == 16, "wire ABI");

#endif /* FGDS_USRBIO_WIRE_H_ */
