// File: usrbio/internal.h
//
// What the usrbio client library's files share: errno preservation at the
// C boundary and the request/reply exchange over a session's socket.
#ifndef FGDS_USRBIO_INTERNAL_H_
#define FGDS_USRBIO_INTERNAL_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "fgds/usrbio.h"
#include "fgds/usrbio_wire.h"

namespace fgds::usrbio {

// ErrnoSaver restores errno on scope exit: the C API promises to leave it
// untouched (results are returned, never stored in errno).
class ErrnoSaver {
 public:
  ErrnoSaver() : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};

// Exchange sends one request of `type` with `payload` (payload_len bytes)
// and `fds` (passed with SCM_RIGHTS; still owned by the caller), then waits
// for its reply. Returns reply.result (0 or -errno from the daemon), with
// *id = reply.id, or -ENOTCONN/-EPIPE if the daemon is gone, -EPROTO if the
// reply is malformed. Thread-safe: serialized on session->lock.
int Exchange(fgds_session* session, uint16_t type, const void* payload,
             size_t payload_len, const int* fds, int nfds, uint32_t* id);
// ExchangeReply is Exchange that returns the whole reply (GPU_IOV_REGISTER's
// path and reason); *reply is filled whenever the result is the daemon's.
int ExchangeReply(fgds_session* session, uint16_t type, const void* payload,
                  size_t payload_len, const int* fds, int nfds,
                  fgds_msg_reply* reply);

// Unregister sends an *_UNREGISTER message for `id`.
int Unregister(fgds_session* session, uint16_t type, uint32_t id);

// Ring helpers (ior.cc) that the GPU stager shares with the host path.
// REQUIRES for the SQ ones: the caller is the ior's only SQ producer for the
// duration (its submitting thread, or anyone holding the stager's lock).

uint64_t NowNs();
// PrepSqe copies `sqe` into the next free SQ slot, unpublished; -EAGAIN
// when the SQ is full or in_flight has reached the CQ size.
int PrepSqe(fgds_ior* ior, const fgds_sqe& sqe);
// PublishPrepared publishes every prepared SQE (release) and returns the
// count; the caller kicks the daemon.
uint32_t PublishPrepared(fgds_ior* ior);
// KickIfSleeping writes the submit eventfd if the daemon's worker sleeps.
void KickIfSleeping(fgds_ior* ior);
// SleepForCompletions sleeps on the completion eventfd (after announcing
// it: no lost wakeup) until completions may be ready or `deadline_ns`
// passed. 0, -ENOTCONN (the daemon is gone) or -errno. Reaping thread only.
int SleepForCompletions(fgds_ior* ior, uint64_t deadline_ns);

// in_flight is updated by both the submitting and the reaping thread.
inline void AddInFlight(fgds_ior* ior, int32_t delta) {
  __atomic_fetch_add(&ior->in_flight, static_cast<uint32_t>(delta),
                     __ATOMIC_RELAXED);
}
inline uint32_t InFlight(const fgds_ior* ior) {
  return __atomic_load_n(&ior->in_flight, __ATOMIC_RELAXED);
}

// Whether a completion's path is a "bounce this entry" answer (either
// kind; the client's twin of backend::IsBounce).
inline bool IsBouncePath(uint32_t path) {
  return path == FGDS_PATH_BOUNCE_ENTRY || path == FGDS_PATH_BOUNCE_ALWAYS;
}

// RejectStrayBounce: the check on every completion handed to the caller
// as the daemon wrote it. A "bounce this entry" path (FGDS_PATH_BOUNCE_ENTRY,
// _ALWAYS) is an answer only the stager's own tries on a NIC-only GPU iov
// may get, and it takes those itself; on any other entry (a mapped GPU
// iov's, a host iov's) nothing can be bounced, and the daemon that answers
// so is broken or lying. The caller gets an error then (-EREMOTEIO, the
// path as given), never a count of bytes that did not move, and the entry
// is not retried.
inline void RejectStrayBounce(fgds_cqe* cqe) {
  if (IsBouncePath(cqe->path)) cqe->result = FGDS_RESULT_BOUNCE;
}

}  // namespace fgds::usrbio

#endif  // FGDS_USRBIO_INTERNAL_H_
