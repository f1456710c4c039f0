// File: backend/remote/frame_stream.h
//
// FrameStream: agent-protocol frames (agent_wire.h) over a connected stream
// socket, with a deadline on every call so that a silent or slow peer
// costs a bounded wait, never a hung thread. A payload is read in pieces
// (ReceivePayload), so file data can land in its final buffer; the CRC of
// a checked frame is summed as the pieces arrive and verified by
// FinishPayload.
//
// Results: 0 (or bytes) on success; -errno on failure: -ETIMEDOUT at the
// deadline, -ECONNRESET when the peer closed, -EBADMSG for a payload whose
// CRC does not match, and the Decode* errors of agent_wire.h. After any
// failure the stream is unusable: the caller closes it.
//
// Thread safety: one thread sends and receives; Shutdown may be called
// from another thread to make a blocked call return.
#ifndef FGDS_BACKEND_REMOTE_FRAME_STREAM_H_
#define FGDS_BACKEND_REMOTE_FRAME_STREAM_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/remote/agent_wire.h"

namespace fgds::remote {

class FrameStream {
 public:
  // Takes ownership of the connected socket `fd` (made non-blocking here).
  explicit FrameStream(int fd);
  ~FrameStream();
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  // From the handshake on: every frame sent carries a CRC, and every frame
  // received must.
  void set_checked(bool checked) { checked_ = checked; }
  bool checked() const { return checked_; }

  // Sends one frame whose payload is the concatenation of `parts`.
  // timeout_ms < 0: no deadline.
  int Send(FrameType type, uint64_t request_id,
           std::span<const struct iovec> parts, int timeout_ms);
  // Receives the next frame's header. Refuses (-EMSGSIZE) a payload larger
  // than `max_payload`, before reading any of it: before the handshake ends
  // the caller allows only the small handshake frames.
  int ReceiveHeader(FrameHeader* header, uint32_t max_payload, int timeout_ms);
  // Reads the next `size` bytes of the current payload into `out`.
  // REQUIRES: size <= payload bytes left.
  int ReceivePayload(void* out, size_t size, int timeout_ms);
  // REQUIRES: the whole payload has been read. Verifies its CRC.
  int FinishPayload();
  size_t payload_left() const { return payload_left_; }

  // Makes blocked and later calls fail (-ECONNRESET or -EPIPE).
  void Shutdown();
  int fd() const { return fd_; }

 private:
  int WaitFor(short events, int64_t deadline_ms);
  int ReadFully(void* out, size_t size, int64_t deadline_ms);

  int fd_;
  bool checked_ = false;
  size_t payload_left_ = 0;
  bool payload_is_checked_ = false;
  uint32_t expected_crc_ = 0;
  uint32_t crc_ = 0;
};

// Milliseconds on the monotonic clock, and a deadline from a timeout
// (-1 for none).
int64_t NowMs();
int64_t DeadlineFrom(int timeout_ms);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_FRAME_STREAM_H_
