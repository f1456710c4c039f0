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

// Unregister sends an *_UNREGISTER message for `id`.
int Unregister(fgds_session* session, uint16_t type, uint32_t id);

}  // namespace fgds::usrbio

#endif  // FGDS_USRBIO_INTERNAL_H_
